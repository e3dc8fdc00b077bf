import { useEffect, useRef, type RefObject } from 'react';
import { useLocation } from 'react-router';

/** How long a page that is still loading may take to draw its heading and get the keyboard. */
const HEADING_WAIT_MS = 5_000;

/** Whether the person has pressed a key or a pointer since the dashboard was loaded. */
let acted = false;
let watching = false;
function watchActs(): void {
  if (watching) return;
  watching = true;
  const onAct = () => {
    acted = true;
    document.removeEventListener('keydown', onAct, true);
    document.removeEventListener('pointerdown', onAct, true);
  };
  document.addEventListener('keydown', onAct, true);
  document.addEventListener('pointerdown', onAct, true);
}

/**
 * Moves the keyboard to a new page's heading (its `h1`) when the person goes to another page
 * (a link, a form that leads to what it made, Back): a page drawn in place of another gives no
 * sign of the change to a screen reader, and the keyboard was left on the link pressed, or dropped
 * on the body once that link was gone, where the next Tab starts over in the header. A page still
 * loading gets the keyboard on the content (`content`, focusable with `tabIndex={-1}`) at once, and
 * on its heading as it is drawn unless the keyboard moved meanwhile. A change of the address's
 * search alone (filters, pages of a list) stays on the page and leaves the keyboard where it is,
 * and so does a redirect before the person did anything (the first Tab stays the skip link's), and
 * a choice in a select that leads elsewhere (the organization switcher).
 */
export function useFocusOnNewPage(content: RefObject<HTMLElement | null>): void {
  const { pathname } = useLocation();
  const shown = useRef(pathname);
  useEffect(watchActs, []);
  useEffect(() => {
    if (shown.current === pathname) return;
    shown.current = pathname;
    const main = content.current;
    // The organization switcher leads to the same page of another organization as its choice
    // changes: the arrow keys go on through its choices.
    if (!acted || !main || document.activeElement instanceof HTMLSelectElement) return;
    const focusHeading = (): boolean => {
      const heading = main.querySelector('h1');
      if (!heading) return false;
      if (!heading.hasAttribute('tabindex')) heading.tabIndex = -1;
      heading.focus();
      return true;
    };
    if (focusHeading()) return;
    main.focus();
    const observer = new MutationObserver(() => {
      if (document.activeElement !== main || focusHeading()) stop();
    });
    const timer = setTimeout(() => stop(), HEADING_WAIT_MS);
    const stop = () => {
      observer.disconnect();
      clearTimeout(timer);
    };
    observer.observe(main, { childList: true, subtree: true });
    return stop;
  }, [pathname, content]);
}
