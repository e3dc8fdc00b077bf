import { releaseSignedBy } from '@drover/shared';
import type { CheckReleaseSignature, ReleaseSignatureRefusal } from '../model/releases.js';

/**
 * A release's sequence and signature (docs/ota.md, "Release keys"), decided in its creation's
 * transaction on what it read there. An application with release keys takes only releases created
 * with their `sequence` (greater than every existing one of the application: 409 otherwise) and a
 * `signature` by one of the keys over the RFC 8785 serialization of `{app, version, sequence,
 * sha256, size}` (422 naming the field otherwise). An application without keys takes a given
 * sequence under the same rule, and no signature. The next sequence is given only while it is at
 * most 2^53 − 1 (409 after: the highest a sequence may be, as the route's schema has it).
 */
export const checkReleaseSignature: CheckReleaseSignature = (r) => {
  const keys = r.app.releaseKeys;
  if (keys && r.sequence === null) {
    return invalid(
      'body.sequence',
      `is required: the application ${r.app.slug} has release keys, so a release is created with the sequence it was signed with (more than ${r.maxSequence})`,
    );
  }
  if (!keys && r.signature !== null) {
    return invalid(
      'body.signature',
      `the application ${r.app.slug} has no release keys: nothing can verify a signature`,
    );
  }
  if (r.sequence !== null && r.sequence <= r.maxSequence) {
    return {
      kind: 'conflict',
      message: `The sequence must be greater than every release of the application: got ${r.sequence}, the highest is ${r.maxSequence}`,
      maxSequence: r.maxSequence,
    };
  }
  if (r.sequence === null && r.maxSequence >= Number.MAX_SAFE_INTEGER) {
    // The next one would be past the integers a JSON number (and the coordinator) keeps exactly:
    // it would be stored rounded, and every creation after it would take the same number again.
    return {
      kind: 'conflict',
      message: `The application has no sequence left to give a release: the highest is ${r.maxSequence}, and a sequence is at most ${Number.MAX_SAFE_INTEGER} (2^53 − 1)`,
      maxSequence: r.maxSequence,
    };
  }
  if (!keys) return null;
  if (r.signature === null) {
    return invalid(
      'body.signature',
      `is required: the application ${r.app.slug} has release keys; sign the release with \`drover release sign\``,
    );
  }
  const fields = { app: r.app.slug, version: r.version, sequence: r.sequence!, sha256: r.sha256, size: r.size };
  if (releaseSignedBy(fields, r.signature, keys) === null) {
    return invalid(
      'body.signature',
      `does not verify with any of the application's ${keys.length} release key(s) over {app: ${r.app.slug}, version: ${r.version}, sequence: ${r.sequence}, sha256: ${r.sha256}, size: ${r.size}}`,
    );
  }
  return null;
};

const invalid = (path: string, message: string): ReleaseSignatureRefusal => ({ kind: 'invalid', path, message });
