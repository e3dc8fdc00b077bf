import canonicalizeModule from 'canonicalize';

// canonicalize is CommonJS (module.exports = fn); its typings declare a default export.
const canonicalize = canonicalizeModule as unknown as (value: unknown) => string | undefined;

/**
 * The UTF-8 bytes of the RFC 8785 (JCS) serialization of a JSON object: keys sorted, no
 * whitespace, numbers as ECMAScript prints them. What Drover signs (manifests, releases, key
 * rotations) is signed over these bytes, so any party that re-serializes the same value gets them.
 */
export function canonicalJsonBytes(value: object): Buffer {
  const canonical = canonicalize(value);
  if (canonical === undefined) throw new Error('only a JSON object can be canonicalized');
  return Buffer.from(canonical, 'utf8');
}
