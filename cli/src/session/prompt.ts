import { CliError, Interrupted } from '../errors.js';
import type { Runtime } from '../runtime.js';

/**
 * Asks for a secret on the terminal without echoing it (raw mode: Enter ends it, Backspace
 * removes a character, Ctrl-C interrupts). Without a terminal, an error saying what to use instead.
 */
export async function promptSecret(rt: Runtime, question: string, instead: string): Promise<string> {
  const stdin = rt.stdin;
  if (!stdin.isTTY || !stdin.setRawMode) throw new CliError(`no terminal to ask the password on: ${instead}`);
  rt.err(question);
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  try {
    return await new Promise<string>((resolve, reject) => {
      let value = '';
      const onData = (chunk: string) => {
        for (const char of chunk) {
          if (char === '\r' || char === '\n' || char === '\u0004') {
            stdin.off('data', onData);
            resolve(value);
            return;
          }
          if (char === '\u0003') {
            stdin.off('data', onData);
            reject(new Interrupted());
            return;
          }
          if (char === '\u007f' || char === '\b') value = [...value].slice(0, -1).join('');
          else if (char >= ' ') value += char;
        }
      };
      stdin.on('data', onData);
    });
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
    rt.err('\n');
  }
}

/** All of standard input as text, without its final line break (`--password-stdin`). */
export async function readStdin(rt: Runtime): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of rt.stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/**
 * The first line of standard input, without its line break (`\n` or `\r\n`): `login
 * --password-stdin`. Reading stops at the first line break, so a writer that keeps standard input
 * open (`(echo pw; sleep 5) | drover login ...`) is not waited for; the rest is left unread.
 */
export async function readStdinLine(rt: Runtime): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of rt.stdin) {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    const end = bytes.indexOf(0x0a);
    if (end === -1) {
      chunks.push(bytes);
      continue;
    }
    chunks.push(bytes.subarray(0, end));
    break;
  }
  return Buffer.concat(chunks).toString('utf8').replace(/\r$/, '');
}
