import { StringDecoder } from 'node:string_decoder';
import type { Masker } from './secret-masker.js';

/** A line longer than this is cut into pieces of this size (a process writing without newlines). */
export const MAX_LINE_CHARS = 65_536;

export interface LineSplitterOptions {
  /** The longest piece of a line (default 64 Ki characters). */
  maxChars?: number;
  /** Long lines are cut outside the secret values it masks, so that each piece masks fully. */
  secrets?: Pick<Masker, 'cut' | 'longest'>;
}

/**
 * Turns the chunks of a byte stream into lines: a line may arrive in several chunks, a chunk may
 * hold several lines, and a UTF-8 character may straddle two chunks. `\n` ends a line; a `\r`
 * before it is dropped. `end()` hands over the last line when the stream did not end with `\n`.
 * A line longer than `maxChars` is handed over in pieces, never cut through a secret value: a
 * piece ends before a value that straddles the limit (it is a little shorter then).
 */
export class LineSplitter {
  readonly #decoder = new StringDecoder('utf8');
  readonly #maxChars: number;
  readonly #secrets: Pick<Masker, 'cut' | 'longest'> | undefined;
  #partial = '';
  readonly #onLine: (line: string) => void;

  constructor(onLine: (line: string) => void, options: LineSplitterOptions = {}) {
    this.#onLine = onLine;
    this.#maxChars = options.maxChars ?? MAX_LINE_CHARS;
    this.#secrets = options.secrets;
  }

  push(chunk: Buffer | string): void {
    this.#consume(typeof chunk === 'string' ? chunk : this.#decoder.write(chunk));
  }

  end(): void {
    this.#consume(this.#decoder.end());
    if (this.#partial !== '') this.#emit(this.#partial);
    this.#partial = '';
  }

  #consume(text: string): void {
    if (text === '') return;
    let buffer = this.#partial + text;
    let newline = buffer.indexOf('\n');
    while (newline !== -1) {
      this.#emit(buffer.slice(0, newline));
      buffer = buffer.slice(newline + 1);
      newline = buffer.indexOf('\n');
    }
    // A line still open: cut only where what follows the cut is known well enough to rule out
    // a secret value straddling it.
    const lookahead = Math.max(0, (this.#secrets?.longest ?? 0) - 1);
    while (buffer.length > this.#maxChars + lookahead) buffer = buffer.slice(this.#piece(buffer));
    this.#partial = buffer;
  }

  #emit(raw: string): void {
    let line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    while (line.length > this.#maxChars) line = line.slice(this.#piece(line));
    this.#onLine(line);
  }

  /** Hands over the first piece of a long line; returns its length. */
  #piece(line: string): number {
    let at = this.#secrets ? this.#secrets.cut(line, this.#maxChars) : this.#maxChars;
    // Never between the two halves of an emoji (a surrogate pair): each piece stays Unicode text.
    const code = line.charCodeAt(at - 1);
    if (at > 1 && code >= 0xd800 && code <= 0xdbff) at--;
    this.#onLine(line.slice(0, at));
    return at;
  }
}
