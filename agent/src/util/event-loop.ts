/**
 * Resolves once every `setImmediate` callback queued in this turn of the event loop, even after
 * this call, has run: in the check phase after the coming one. undici writes a request on a
 * reused keep-alive connection from such a callback (it first lets the poll phase show whether
 * the idle socket was closed or sent stray bytes), so blocking work begun sooner, even from an
 * immediate queued just after the request, would hold the request back. Work that must not delay
 * a request just made waits for this.
 */
export function afterPendingImmediates(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}
