import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import PQueue from 'p-queue';
import { characterCount } from '@drover/shared';
import { AppError, invalid } from '../../errors.js';

/**
 * Passwords are stored as `scrypt$N$r$p$<salt b64>$<hash b64>` (RFC 7914, N=2^15, r=8, p=1:
 * about 50 ms and 32 MiB per hash here), never plain or with a fast hash.
 */
const PARAMS = { N: 32768, r: 8, p: 1 } as const;
const KEY_BYTES = 32;
export const MIN_PASSWORD_LENGTH = 8;
export const MAX_PASSWORD_LENGTH = 1024;

/** Refuses (422 at `path`) a password to be set that is too short or too long. */
export function checkNewPassword(password: string, path: string): void {
  const length = characterCount(password);
  if (length < MIN_PASSWORD_LENGTH || length > MAX_PASSWORD_LENGTH) {
    throw invalid(path, `must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters, got ${length}`);
  }
}

/**
 * Runs tasks one at a time, at most `maxWaiting` waiting: beyond that a task is refused at once
 * (429, retry in a second), so a flood costs neither memory nor a queue whose last caller waits
 * for minutes.
 */
export class HashingQueue {
  readonly #queue = new PQueue({ concurrency: 1 });

  constructor(readonly maxWaiting: number) {}

  run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#queue.size >= this.maxWaiting) {
      return Promise.reject(
        new AppError('rate_limited', 'Too many sign-ins are being checked at once; retry in a second', {
          retryAfter: 1,
        }),
      );
    }
    return this.#queue.add(task);
  }
}

/**
 * One hash at a time, for the whole process. scrypt runs on libuv's thread pool, which file
 * reads and writes share: 32 concurrent sign-ins used to occupy all four threads and stall every
 * presigned download for seconds. One thread for hashing leaves the other three to files. At
 * most 64 hashes wait; beyond that a sign-in is refused at once.
 */
export const passwordHashing = new HashingQueue(64);

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return passwordHashing.run(() => scryptKey(password, salt, options));
}

function scryptKey(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(
      password.normalize('NFKC'),
      salt,
      KEY_BYTES,
      { ...options, maxmem: 128 * options.N! * options.r! * 2 },
      (err, key) => (err ? reject(err) : resolve(key)),
    );
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

type HashParts = [n: string, r: string, p: string, salt: string, hash: string];

function partsOf(stored: string): HashParts | null {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  return scheme === 'scrypt' && n && r && p && salt && hash ? [n, r, p, salt, hash] : null;
}

/**
 * The hash a password is checked against: the stored one, or the decoy when what is stored is no
 * password (`!sso`, an account single sign-on made), so that such an account answers as slowly as
 * any other and a wrong password does not tell it apart.
 */
export async function hashToCheck(stored: string): Promise<{ parts: HashParts; decoy: boolean }> {
  const parts = partsOf(stored);
  if (parts) return { parts, decoy: false };
  return { parts: partsOf(await decoyPasswordHash())!, decoy: true };
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const { parts, decoy } = await hashToCheck(stored);
  const [n, r, p, salt, hash] = parts;
  const expected = Buffer.from(hash, 'base64');
  const key = await derive(password, Buffer.from(salt, 'base64'), { N: Number(n), r: Number(r), p: Number(p) });
  return !decoy && key.length === expected.length && timingSafeEqual(key, expected);
}

/** A hash of a random password, so a login for an unknown email costs as much as a real one. */
let decoy: Promise<string> | undefined;
export function decoyPasswordHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'));
  return decoy;
}
