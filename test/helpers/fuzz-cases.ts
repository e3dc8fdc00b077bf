import {
  attackQuery,
  attackSegment,
  attackString,
  bulkString,
  deepJson,
  nonJsonBody,
  randomJson,
  safeEncode,
} from './fuzz-attacks.js';
import { ID_KINDS, type FuzzFixture, type IdKind } from './fuzz-fixture.js';
import { hostilePayload, mutate, toJsonText, validValue } from './fuzz-json.js';
import { Random } from './fuzz-random.js';
import type { FuzzRoute, RouteAuth } from './fuzz-routes.js';

/**
 * Seeded fuzz cases: one request each, made only from the seed, the route and the fixture's ids
 * (never from earlier answers), so the same seed sends the same requests again.
 */

export type CredentialKind =
  | 'none'
  | 'garbage'
  | 'session'
  | 'memberSession'
  | 'apiToken'
  | 'agent'
  /** A valid agent signature over another body than the one sent. */
  | 'agentOtherBody';

/** A header value replaced by the current Unix milliseconds when the request is sent. */
export const SEND_TIME = '<send time>';

export interface FuzzCase {
  /** `<route index>.<case index>`: names the case in a report. */
  name: string;
  route: FuzzRoute;
  method: string;
  /** The request target as sent: raw path and query. */
  target: string;
  credential: CredentialKind;
  /** Headers sent as they are (a garbage credential is one of them). */
  headers: Record<string, string>;
  body: Buffer | undefined;
}

const CREDENTIALS: readonly CredentialKind[] = [
  'none',
  'garbage',
  'session',
  'memberSession',
  'apiToken',
  'agent',
  'agentOtherBody',
];

const EXPECTED: Record<RouteAuth, CredentialKind[]> = {
  session: ['session', 'session', 'memberSession'],
  apiToken: ['apiToken'],
  agentSignature: ['agent'],
  none: ['none'],
};

/** `orgId` is an org, `fileId` a file; a bare `id` takes the kind of the segment before it. */
export function idKindOf(param: string, previousSegment: string): IdKind | null {
  const stem = param === 'id' ? previousSegment.replace(/s$/, '') : param.replace(/Id$/, '');
  return (ID_KINDS as readonly string[]).includes(stem) ? (stem as IdKind) : null;
}

function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

function pathSegment(rnd: Random, fx: FuzzFixture, kind: IdKind | null, destructive: boolean): string {
  const usable = (ids: string[]) => (destructive ? ids.filter((id) => !fx.protectedIds.has(id)) : ids);
  const own = kind ? usable(fx.ids[kind]) : [];
  const any = usable(Object.values(fx.ids).flat());
  return rnd.weighted<() => string>([
    [own.length > 0 ? 14 : 0, () => rnd.pick(own)],
    [own.length > 0 ? 1 : 0, () => rnd.pick(own).toUpperCase()],
    [2, () => rnd.pick(any)],
    [2, () => rnd.uuid()],
    [5, () => attackSegment(rnd)],
  ])();
}

function queryString(rnd: Random, fx: FuzzFixture, route: FuzzRoute): string {
  const names = Object.keys(route.query);
  const known = fx.queries[route.path];
  const parts: string[] = [];
  if (known && rnd.chance(0.7)) {
    const pairs = rnd.pick(known).split('&');
    if (rnd.chance(0.3)) {
      const at = rnd.int(0, pairs.length - 1);
      const [name] = pairs[at]!.split('=');
      pairs[at] = rnd.weighted<() => string>([
        [3, () => `${name}=${safeEncode(attackString(rnd))}`],
        [1, () => ''],
        [1, () => `${pairs[at]}&${pairs[at]}`],
      ])();
    }
    parts.push(pairs.filter(Boolean).join('&'));
  } else {
    for (const name of names) {
      if (!rnd.chance(0.5)) continue;
      const value = validValue(route.query[name]!, rnd, fx.hints, name);
      parts.push(`${name}=${safeEncode(typeof value === 'string' ? value : toJsonText(value))}`);
    }
  }
  if (rnd.chance(names.length > 0 || known ? 0.3 : 0.15)) parts.push(attackQuery(rnd, names));
  return parts.length > 0 ? `?${parts.join('&')}` : '';
}

function jsonBody(rnd: Random, fx: FuzzFixture, route: FuzzRoute): Buffer | undefined {
  const text = (value: unknown) => Buffer.from(toJsonText(value), 'utf8');
  const schema = route.body;
  const valid = () => (schema ? validValue(schema, rnd, fx.hints) : randomJson(rnd));
  return rnd.weighted<() => Buffer | undefined>([
    [schema ? 8 : 1, () => text(valid())],
    [schema ? 7 : 1, () => text(mutate(valid(), rnd))],
    [
      schema ? 5 : 0,
      () => text(validValue(schema!, rnd, fx.hints, undefined, { freeForm: () => hostilePayload(rnd) })),
    ],
    [2, () => text(randomJson(rnd))],
    [1, () => text(deepJson(rnd))],
    [1, () => Buffer.from(`{"params":${deepJson(rnd).text}}`)],
    [2, () => nonJsonBody(rnd)],
    [1, () => Buffer.alloc(0)],
    [schema ? 1 : 12, () => undefined],
    [0.3, () => Buffer.from(`{"big":${bulkString(1_100_000).text}}`)],
  ])();
}

const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=latin1',
  'application/octet-stream',
  'a/b/c;;;=',
  '',
];

function garbageCredential(rnd: Random): Record<string, string> {
  return rnd.weighted<() => Record<string, string>>([
    [3, () => ({ authorization: `Bearer ${rnd.pick(['drv_', 'drve_', '', 'eyJ'])}${rnd.string(rnd.int(0, 60))}` })],
    [1, () => ({ authorization: rnd.pick(['Bearer', 'Bearer ', 'Basic YTpi', 'bearer  x', 'Token abc', '\u00ff']) })],
    [1, () => ({ authorization: `Bearer ${'a.'.repeat(rnd.pick([3, 2_000]))}` })],
    [1, () => ({ authorization: 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.' })],
    [
      2,
      () => ({
        'x-agent-id': rnd.chance(0.5) ? rnd.uuid() : rnd.string(10),
        'x-timestamp': rnd.pick([SEND_TIME, '0', '-1', '1e20', 'now', '9'.repeat(30)]),
        'x-nonce': rnd.string(rnd.int(0, 80), 'abcXYZ_-!'),
        'x-signature': rnd.pick(['', 'AAAA', 'x'.repeat(88), Buffer.alloc(64).toString('base64')]),
      }),
    ],
  ])();
}

function extraHeaders(rnd: Random, route: FuzzRoute): Record<string, string> {
  const headers: Record<string, string> = {};
  if (rnd.chance(0.15)) {
    headers['idempotency-key'] = rnd.pick(['', 'k', 'same-key', 'x'.repeat(256), rnd.string(rnd.int(1, 40))]);
  }
  if (rnd.chance(0.1)) headers['x-request-id'] = rnd.pick(['', 'a'.repeat(200), rnd.string(20), 'id with spaces']);
  if (route.path.includes('blobs') && rnd.chance(0.4)) {
    headers.range = rnd.pick([
      'bytes=0-1',
      'bytes=-3',
      'bytes=5-',
      'bytes=9-1',
      'bytes=0-1,3-4',
      'bytes=x',
      'items=0-1',
      'bytes=99999-',
    ]);
    if (rnd.chance(0.3)) headers['if-range'] = rnd.pick(['"abc"', 'Wed, 21 Oct 2015 07:28:00 GMT', 'garbage']);
  }
  if (rnd.chance(0.1)) headers.accept = rnd.pick(['text/html', 'text/event-stream', '*/*', 'application/xml', ';;']);
  return headers;
}

function oneCase(rnd: Random, fx: FuzzFixture, route: FuzzRoute, name: string): FuzzCase {
  const method = rnd.weighted<() => string>([
    [22, () => route.method],
    [route.head ? 2 : 0, () => 'HEAD'],
    [
      1,
      () => rnd.pick(['GET', 'POST', 'PUT', 'PATCH', 'OPTIONS', 'TRACE', 'PROPFIND'].filter((m) => m !== route.method)),
    ],
  ])();
  const destructive = route.method === 'DELETE';
  const segments = route.path.split('/');
  const path = segments
    .map((segment, i) =>
      segment.startsWith(':')
        ? pathSegment(rnd, fx, idKindOf(segment.slice(1), segments[i - 1] ?? ''), destructive)
        : segment,
    )
    .join('/');
  const credential = rnd.chance(0.65) ? rnd.pick(EXPECTED[route.auth]) : rnd.pick(CREDENTIALS);
  const body = jsonBody(rnd, fx, route);
  const headers = extraHeaders(rnd, route);
  if (credential === 'garbage') Object.assign(headers, garbageCredential(rnd));
  if (body !== undefined && rnd.chance(0.85)) headers['content-type'] = 'application/json';
  else if (body !== undefined && rnd.chance(0.8)) headers['content-type'] = rnd.pick(CONTENT_TYPES);
  return { name, route, method, target: `${path}${queryString(rnd, fx, route)}`, credential, headers, body };
}

/**
 * `perRoute` cases for each route, each route's from its own generator (the seed mixed with the
 * route's method and path), so adding a route does not change the cases of the others.
 */
export function generateCases(
  routes: readonly FuzzRoute[],
  fx: FuzzFixture,
  seed: number,
  perRoute: number,
): FuzzCase[] {
  return routes.flatMap((route, r) => {
    const rnd = new Random((seed ^ hashString(`${route.method} ${route.path}`)) >>> 0);
    return Array.from({ length: perRoute }, (_, i) => oneCase(rnd, fx, route, `${r}.${i}`));
  });
}
