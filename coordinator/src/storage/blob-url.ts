import { createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';

/**
 * The local backend's presigned URLs (docs/storage.md):
 * `<publicUrl>/v1/storage/blobs/<fileId>?m=<PUT|GET>&exp=<unix seconds>&n=<nonce>&sig=<base64url>`
 * where `sig` is HMAC-SHA256, under a server secret kept in the database, over
 * `DROVER-BLOB-V1\n<method>\n<fileId>\n<exp>\n<n>`. The nonce (12 random bytes) makes every URL
 * new, as the spec asks of download URLs, even two issued in the same second. URLs issued before
 * it existed (no `n`, signed without the last line) stay valid until they expire. The URL is the
 * credential: whoever holds it may do that one thing to that one file until it expires.
 */

export type BlobMethod = 'PUT' | 'GET';
const VERSION = 'DROVER-BLOB-V1';
const SIG = /^[A-Za-z0-9_-]{43}$/; // 32 bytes, base64url without padding
const EXP = /^\d{1,12}$/;
const NONCE = /^[A-Za-z0-9_-]{16}$/; // 12 bytes, base64url

/** The query of a presigned blob URL, as received (anything may be missing or malformed). */
export interface BlobUrlQuery {
  m?: string | undefined;
  exp?: string | undefined;
  n?: string | undefined;
  sig?: string | undefined;
}

export type BlobUrlCheck =
  { ok: true } | { ok: false; reason: 'malformed' | 'bad_signature' | 'wrong_method' | 'expired' };

export class BlobUrlSigner {
  /** Imported once: an HMAC under raw bytes imports them again at every URL (~10% of a signed manifest). */
  private readonly key: KeyObject;

  constructor(key: Buffer) {
    if (key.length < 32) throw new Error('the blob URL signing key must be at least 32 bytes');
    this.key = createSecretKey(key);
  }

  /** The query string (without `?`) of a URL allowing `method` on `fileId` until `exp` (Unix s). */
  query(method: BlobMethod, fileId: string, exp: number): string {
    const nonce = randomBytes(12).toString('base64url');
    return `m=${method}&exp=${exp}&n=${nonce}&sig=${this.sign(method, fileId, exp, nonce)}`;
  }

  /**
   * Checks a URL used with `method`: the signature first (constant time), so that a tampered URL
   * tells nothing else; then the method it was signed for; then the expiry.
   */
  check(method: string, fileId: string, query: BlobUrlQuery, nowSeconds: number): BlobUrlCheck {
    const { m, exp, n, sig } = query;
    if (
      (m !== 'PUT' && m !== 'GET') ||
      typeof exp !== 'string' ||
      !EXP.test(exp) ||
      (n !== undefined && (typeof n !== 'string' || !NONCE.test(n))) ||
      typeof sig !== 'string' ||
      !SIG.test(sig)
    ) {
      return { ok: false, reason: 'malformed' };
    }
    const expected = Buffer.from(this.sign(m, fileId, Number(exp), n));
    const given = Buffer.from(sig);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      return { ok: false, reason: 'bad_signature' };
    }
    if (m !== method) return { ok: false, reason: 'wrong_method' };
    if (Number(exp) <= nowSeconds) return { ok: false, reason: 'expired' };
    return { ok: true };
  }

  private sign(method: BlobMethod, fileId: string, exp: number, nonce: string | undefined): string {
    const signed = `${VERSION}\n${method}\n${fileId}\n${exp}${nonce === undefined ? '' : `\n${nonce}`}`;
    return createHmac('sha256', this.key).update(signed).digest('base64url');
  }
}
