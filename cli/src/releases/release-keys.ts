import { createHash, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  generateEd25519KeyPair,
  privateKeyFromBase64,
  publicKeyOf,
  releaseKeyProblem,
  signRelease,
  signRotation,
  type ReleaseKeyRotation,
  type SignedReleaseFields,
} from '@drover/shared';
import { CliError } from '../errors.js';
import { readInputFile } from '../input-file.js';

/**
 * Release keys on the signer's machine (docs/ota.md, "Release keys"): a private key is a file of
 * one line, the standard base64 of the raw 32-byte Ed25519 seed, readable by its owner only (0600).
 * Nothing here talks to the coordinator: signing happens off it.
 */

/** Writes a new key pair's private key to `file` (0600, never over an existing file); answers the public key. */
export function writeNewReleaseKey(file: string): string {
  const keys = generateEd25519KeyPair();
  let fd: number;
  try {
    fd = fs.openSync(file, 'wx', 0o600);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST')
      throw new CliError(`${file} exists already: choose another file (a key is never overwritten)`);
    throw new CliError(`cannot create ${file}: ${(error as Error).message}`);
  }
  try {
    fs.writeSync(fd, `${keys.privateKey}\n`);
    fs.fchmodSync(fd, 0o600); // whatever the umask
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return keys.publicKey;
}

/** The private key in `file`, with its public key; a clear error when the file is not one. */
export function readReleaseKey(file: string): { privateKey: KeyObject; publicKey: string } {
  const text = readInputFile(file, 'the key file');
  try {
    const privateKey = privateKeyFromBase64(text.trim());
    return { privateKey, publicKey: publicKeyOf(privateKey) };
  } catch {
    throw new CliError(
      `${file} is not a release key: expected one line, the standard base64 of a 32-byte Ed25519 seed (\`drover release keygen\` writes one)`,
    );
  }
}

/** The SHA-256 (lowercase hex) and size of a local file, read as a stream. */
export async function fileDigest(file: string): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  try {
    for await (const chunk of fs.createReadStream(path.resolve(file)) as AsyncIterable<Buffer>) {
      hash.update(chunk);
      size += chunk.length;
    }
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
  }
  return { sha256: hash.digest('hex'), size };
}

/** The signature of a release (standard base64). */
export function signReleaseWith(file: string, fields: SignedReleaseFields): string {
  return signRelease(fields, readReleaseKey(file).privateKey);
}

/** A rotation of `app`'s keys to `keys`, signed with the key in `file` (one of the current set). */
export function rotateReleaseKeys(
  file: string,
  fields: { app: string; generation: number; keys: readonly string[] },
): ReleaseKeyRotation {
  fields.keys.forEach((key) => {
    const problem = releaseKeyProblem(key);
    if (problem) throw new CliError(`--new-key ${problem}`);
  });
  return signRotation(fields, readReleaseKey(file).privateKey);
}
