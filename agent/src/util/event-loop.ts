/**
 * Resolves once every `setImmediate` callback queued in this turn of the event loop, even after
 * this call, has run: in the check phase after the coming one. A request made now is on the wire
 * by then when it goes out on a kept-alive connection (Node writes it from `process.nextTick`),
 * so blocking work that waits for this (a file flushed, a process forked) never holds it back,
 * not even work queued from an immediate just after the request.
 */
export function afterPendingImmediates(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}
