/**
 * `next` normalized when it is a path of this site (`/orgs/…`, with its query and fragment), else
 * null: never another site, a scheme-relative `//host`, or a backslash a browser reads as `/`,
 * whether given so or made so by the normalization (`/.//host` and `/a/..//host` are `//host`
 * once their dot segments are gone). Where to go after signing in: the coordinator refuses
 * another (single sign-on's `next`), the sign-in page ignores it.
 */
export function sitePath(next: string): string | null {
  const base = 'http://drover.invalid';
  let url: URL;
  try {
    url = new URL(next, base);
  } catch {
    return null;
  }
  if (url.origin !== base) return null;
  const path = `${url.pathname}${url.search}${url.hash}`;
  const twoSlashes = /^\/[/\\]/;
  if (!next.startsWith('/') || next.includes('\\') || twoSlashes.test(next) || twoSlashes.test(path)) return null;
  return path;
}
