import type { FastifyRequest } from 'fastify';

/**
 * True when the request prefers an HTML page to JSON, as a browser opening an address does
 * (`Accept: text/html,...,*\/*;q=0.8`). No Accept, `*\/*` or `application/json` keep JSON.
 */
export function prefersHtml(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  const accept = request.headers.accept;
  if (typeof accept !== 'string' || accept.length > 2048) return false;
  const weights = new Map<string, number>();
  for (const part of accept.split(',')) {
    const [type = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => /^\s*q=(.*)$/.exec(p)?.[1]).find((v) => v !== undefined);
    const weight = q === undefined ? 1 : Number(q.trim() || 'x'); // an unreadable weight counts for nothing
    if (type && Number.isFinite(weight)) weights.set(type.trim(), weight);
  }
  const html = weights.get('text/html') ?? 0;
  const json = weights.get('application/json') ?? weights.get('application/*') ?? weights.get('*/*') ?? 0;
  return html > 0 && html > json;
}
