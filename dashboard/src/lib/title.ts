const PRODUCT = 'Drover';

/**
 * Keeps the document's title as the page's own heading (its `h1`) and the product's name,
 * `Jobs · Drover`, `Job #42 deploy running · Drover`, and `Drover` alone while no heading is drawn
 * (a page loading). A screen reader says the title when the page changes, and the browser's tabs
 * and history tell one page from another by it. Read from the page as it is drawn, a heading that
 * comes with its data (an agent's name, a job's status) is in the title as soon as it is on the
 * page, and no page can forget to name itself. A heading that names the product already
 * (`Sign in to Drover`) is the title alone.
 */
export function keepTitleToHeading(root: HTMLElement): () => void {
  const update = () => {
    const heading = root.querySelector('h1')?.textContent?.replace(/\s+/g, ' ').trim();
    const title = !heading ? PRODUCT : heading.endsWith(PRODUCT) ? heading : `${heading} · ${PRODUCT}`;
    if (document.title !== title) document.title = title;
  };
  const observer = new MutationObserver(update);
  observer.observe(root, { childList: true, subtree: true, characterData: true });
  update();
  return () => observer.disconnect();
}
