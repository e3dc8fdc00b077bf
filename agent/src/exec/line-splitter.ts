import { StringDecoder } from 'node:string_decoder';

/** A line longer than this is cut into pieces of this size (a process writing without newlines). */
export const MAX_LINE_CHARS = 65_536;

/**
 * Turns the chunks of a byte stream into lines: a line may arrive in several chunks, a chunk may
 * hold several lines, and a UTF-8 character may straddle two chunks. `\n` ends a line; a `\r`
 * before it is dropped. `end()` hands over the last line when the stream did not end with `\n`.
 */
export class LineSplitter {
  readonly #decoder = new StringDecoder('utf8');
  #partial = '';

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxChars = MAX_LINE_CHARS,
  ) {}

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
    while (buffer.length > this.maxChars) {
      this.onLine(buffer.slice(0, this.maxChars));
      buffer = buffer.slice(this.maxChars);
    }
    this.#partial = buffer;
  }

  #emit(raw: string): void {
    let line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    while (line.length > this.maxChars) {
      this.onLine(line.slice(0, this.maxChars));
      line = line.slice(this.maxChars);
    }
    this.onLine(line);
  }
}
