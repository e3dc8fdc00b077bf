/**
 * Gives the keyboard back to a button that lost it by being disabled. A button pressed with the
 * keyboard is disabled while its request is in flight (`disabled={mutation.isPending}`), and the
 * browser takes the keyboard off a disabled control, to the page's body, where the next Tab starts
 * over at the top and a screen reader says nothing. Enabled again (the request answered) and still
 * on the page, the button has the keyboard back, unless the keyboard went somewhere else meanwhile.
 * One watch over the whole page, so that no button of the dashboard has to remember it.
 */
export function returnFocusWhenEnabled(root: HTMLElement): () => void {
  let lastFocused: EventTarget | null = null;
  /** The button that had the keyboard when it was disabled, while the keyboard went nowhere else. */
  let waiting: HTMLButtonElement | null = null;
  const adrift = () => document.activeElement === null || document.activeElement === document.body;
  const onFocusIn = (event: FocusEvent) => {
    lastFocused = event.target;
    if (event.target !== waiting) waiting = null;
  };
  const observer = new MutationObserver((mutations) => {
    for (const { target } of mutations) {
      if (!(target instanceof HTMLButtonElement)) continue;
      if (target.disabled) {
        // Seen before the browser takes the keyboard off it, or just after (the keyboard adrift).
        if (document.activeElement === target || (lastFocused === target && adrift())) waiting = target;
      } else if (target === waiting) {
        waiting = null;
        if (target.isConnected && adrift()) target.focus({ preventScroll: true });
      }
    }
  });
  document.addEventListener('focusin', onFocusIn);
  observer.observe(root, { attributes: true, attributeFilter: ['disabled'], subtree: true });
  return () => {
    observer.disconnect();
    document.removeEventListener('focusin', onFocusIn);
  };
}
