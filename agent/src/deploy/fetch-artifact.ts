import fs from 'node:fs';
import path from 'node:path';
import { ResumableDownload, type DownloadSettings } from '../files/download.js';
import { formatBytes } from '../files/format.js';
import { hashFileHandle } from '../files/hash-file.js';
import { retryTransfer } from '../files/retry-transfer.js';
import { abortError, TransferAborted, TransferError } from '../files/transfer-error.js';
import { Backoff } from '../util/backoff.js';

/** Thrown by `refresh` when the fresh manifest can no longer be trusted or no longer names the release. */
export class DeployRefusal extends Error {
  override readonly name = 'DeployRefusal';
}

/** Where the artifact comes from and what it must be: the signed manifest's values. */
export interface ArtifactSource {
  url: string;
  size: number;
  /** Lowercase hex SHA-256 (the release's `checksum_sha256`). */
  sha256: string;
}

export interface FetchArtifactRequest {
  /** The final path; nothing is there unless the download completed and matched. */
  target: string;
  source: ArtifactSource;
  /** A fresh source from a newly fetched and verified manifest (the URL was refused: expired). */
  refresh(): Promise<ArtifactSource>;
  signal: AbortSignal;
  log(text: string): void;
  /** What is downloaded, in the progress lines: `artifact app 1.2.3`. */
  label: string;
  /** The application's id: the partial download of another of its releases is removed. */
  applicationId: string;
  /** Where partials are kept, the minimum speed (the agent's run options). */
  downloads?: DownloadSettings;
  /** Download attempts in a row that get no byte (default 3). */
  attempts?: number;
  backoff?: Backoff;
}

export type ArtifactOutcome =
  /** `bytes`: the artifact's size, downloaded. */
  | { ok: true; bytes: number }
  /** `refused`: the bytes are not the signed ones (size or SHA-256). */
  | { ok: false; refused: boolean; aborted: 'timeout' | 'cancelled' | null; message: string };

/**
 * Downloads the release artifact (files/download.ts: resumed where it stopped, size and SHA-256
 * checked after the last byte, renamed into place only when they match). Network errors and 5xx
 * answers are retried with a pause, going on from the bytes already there (a failure after new
 * bytes arrived does not count against the attempts); a refused URL (expired) is replaced by a
 * fresh one from a newly verified manifest; content that does not match is refused at once; too
 * little disk space or a connection slower than the minimum speed fail the download.
 */
export async function fetchArtifact(req: FetchArtifactRequest): Promise<ArtifactOutcome> {
  let source = req.source;
  fs.mkdirSync(path.dirname(req.target), { recursive: true, mode: 0o700 });
  let download: ResumableDownload | undefined;
  try {
    download = new ResumableDownload({
      ...req.downloads,
      target: req.target,
      expectedSize: source.size,
      expectedSha256: source.sha256,
      label: req.label,
      slot: `artifact:${req.applicationId}`,
      signal: req.signal,
      log: (text) => req.log(text),
    });
    const current = download;
    await retryTransfer(
      () => {
        if (source.size !== req.source.size || source.sha256.toLowerCase() !== req.source.sha256.toLowerCase()) {
          throw new DeployRefusal(
            'the fresh manifest names another artifact (size or SHA-256) than the one being downloaded',
          );
        }
        return current.attempt(source.url);
      },
      {
        attempts: req.attempts ?? 3,
        backoff: req.backoff ?? new Backoff({ baseMs: 1000, capMs: 10_000 }),
        signal: req.signal,
        what: 'download of the artifact',
        log: (text) => req.log(text),
        refresh: async () => {
          source = await req.refresh();
        },
        progressed: () => current.progressed(),
      },
    );
    return { ok: true, bytes: source.size };
  } catch (error) {
    if (error instanceof TransferAborted)
      return { ok: false, refused: false, aborted: error.why, message: error.message };
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof TransferError) return { ok: false, refused: error.mismatch, aborted: null, message };
    if (req.signal.aborted) {
      const aborted = abortError(req.signal);
      const why = aborted instanceof TransferAborted ? aborted.why : 'cancelled';
      return { ok: false, refused: false, aborted: why, message: aborted.message };
    }
    return { ok: false, refused: error instanceof DeployRefusal, aborted: null, message };
  } finally {
    download?.close();
  }
}

/**
 * Hashes the downloaded file again as it lies on disk, just before it is installed: a file
 * changed since the download (or a download check that went wrong) is refused.
 */
export async function verifyArtifactOnDisk(
  file: string,
  expected: { size: number; sha256: string },
  signal: AbortSignal,
): Promise<string | null> {
  const handle = await fs.promises.open(file, 'r');
  try {
    const got = await hashFileHandle(handle, signal);
    if (got.size !== expected.size) return `the artifact on disk has ${got.size} bytes, ${expected.size} were signed`;
    if (got.sha256 !== expected.sha256.toLowerCase()) {
      return `the artifact on disk does not match the signed checksum: expected SHA-256 ${expected.sha256.toLowerCase()}, got ${got.sha256}`;
    }
    return null;
  } finally {
    await handle.close();
  }
}

/** `app-1.4.2.tar.gz (12.3 MB)`. */
export const describeArtifact = (file: string, size: number): string => `${path.basename(file)} (${formatBytes(size)})`;
