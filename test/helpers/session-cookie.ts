/** The dashboard's session cookie, as a browser would keep and send it (for tests over plain HTTP). */

export const SESSION_COOKIE = 'drover_session';
/** Its name when the dashboard is reached over HTTPS. */
export const SECURE_SESSION_COOKIE = '__Host-drover_session';

export interface SetCookie {
  name: string;
  value: string;
  attributes: Record<string, string | true>;
}

/** Parses one Set-Cookie header: its name, value and attributes (keys lower-cased). */
export function parseSetCookie(header: string): SetCookie {
  const [pair = '', ...rest] = header.split(';');
  const eq = pair.indexOf('=');
  const attributes: Record<string, string | true> = {};
  for (const part of rest) {
    const [key = '', ...value] = part.trim().split('=');
    attributes[key.toLowerCase()] = value.length ? value.join('=') : true;
  }
  return { name: pair.slice(0, eq).trim(), value: pair.slice(eq + 1).trim(), attributes };
}

/** The session cookie a response sets, or undefined. */
export function sessionCookieSet(headers: Headers, name = SESSION_COOKIE): SetCookie | undefined {
  return headers
    .getSetCookie()
    .map(parseSetCookie)
    .find((c) => c.name === name);
}

/** Signs in like the dashboard does and returns the session cookie's value. */
export async function signInForCookie(origin: string, email: string, password: string): Promise<string> {
  const res = await fetch(`${origin}/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin, 'x-drover-csrf': '1' },
    body: JSON.stringify({ email, password }),
  });
  const cookie = sessionCookieSet(res.headers);
  if (res.status !== 200 || !cookie) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`);
  return cookie.value;
}
