/**
 * Why `backup` or `restore` stopped. `refused`: the input is wrong and nothing was written (exit
 * status 2: bad usage); `failed`: something went wrong while working, and what was begun was
 * removed (exit status 1).
 */
export class BackupError extends Error {
  constructor(
    readonly code: 'refused' | 'failed',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'BackupError';
  }
}

export const refused = (message: string): BackupError => new BackupError('refused', message);
export const failed = (message: string, cause?: unknown): BackupError => new BackupError('failed', message, { cause });

/** What an fs error says, without Node's `code, syscall 'path'` clutter. */
export function fsReason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'ENOSPC') return 'no space left on the device';
  if (code === 'ENOENT') return 'no such file or directory';
  if (code === 'EISDIR') return 'it is a directory';
  if (code === 'ENOTDIR') return 'a part of its path is not a directory';
  if (code === 'EROFS') return 'the file system is read-only';
  return (error as Error).message;
}
