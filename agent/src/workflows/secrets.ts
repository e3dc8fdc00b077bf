import fs from 'node:fs/promises';
import path from 'node:path';
import { isScalar } from 'yaml';
import { YamlReader } from './yaml-reader.js';
import { RESERVED_NAME } from './parse-workflow.js';

/** The secrets file of the state directory: `NAME: value` lines, mode 0600. */
export const SECRETS_FILE = 'secrets.yaml';
const MAX_SECRETS_FILE_BYTES = 1024 * 1024;
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface LoadedSecrets {
  /** Secret values by name; empty when the file is missing or refused. */
  secrets: Record<string, string>;
  /**
   * Why the file was refused (no secret is given to any job then): readable by others,
   * unreadable, invalid YAML, a value that is not a string... Absent when all is well,
   * including when there is no secrets file at all.
   */
  problem?: string;
}

/**
 * Reads `<stateDir>/secrets.yaml`. The file is all or nothing: any problem refuses it whole,
 * so that a job never runs with half of its secrets. Never throws.
 */
export async function loadSecrets(stateDir: string): Promise<LoadedSecrets> {
  const file = path.join(stateDir, SECRETS_FILE);
  let bytes: Buffer;
  try {
    const stat = await fs.stat(file);
    if (!stat.isFile()) return refused(`${file} is not a file`);
    const mode = stat.mode & 0o777;
    if (mode & 0o077) {
      return refused(
        `${file} can be read by other users (mode ${mode.toString(8).padStart(4, '0')}); ` +
          `run \`chmod 600 ${file}\`; until then no secrets are given to any job`,
      );
    }
    if (stat.size > MAX_SECRETS_FILE_BYTES) return refused(`${file} is too large (at most 1 MiB)`);
    bytes = await fs.readFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { secrets: {} };
    return refused(`cannot read ${file}: ${code === 'EACCES' ? 'permission denied' : (code ?? String(error))}`);
  }
  // Decoded leniently, a value saved as Latin-1 (`pässwort`) would reach the jobs with U+FFFD in
  // place of its letter: a wrong password, and nothing to say why.
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    const lenient = bytes.toString('utf8');
    const line = lenient.slice(0, lenient.indexOf('\ufffd')).split('\n').length;
    return refused(
      `${SECRETS_FILE}:${line}: the file is not UTF-8 text (save it as UTF-8; Latin-1 is not read); ` +
        'until it is fixed no secrets are given to any job',
    );
  }
  return parseSecrets(file, text);
}

/** Parses the secrets file's text; `file` is only used in messages. */
export function parseSecrets(file: string, text: string): LoadedSecrets {
  const y = new YamlReader(path.basename(file), text, { concealValues: true });
  const secrets: Record<string, string> = {};
  if (y.parsed && y.root !== null && !(isScalar(y.root) && y.root.value === null)) {
    const entries = y.map(y.root, []);
    for (const [name, entry] of entries ?? []) {
      if (!SECRET_NAME.test(name)) {
        y.problem(
          entry.keyNode,
          [],
          `\`${name}\` is not a valid secret name: letters, digits and \`_\`, not starting with a digit ` +
            '(each secret becomes an environment variable of that name)',
        );
        continue;
      }
      if (name === RESERVED_NAME) {
        y.problem(entry.keyNode, [], '`__proto__` cannot be a secret name: choose another name');
        continue;
      }
      // Strictly strings: `PIN: 0123` would otherwise become the number 123.
      const value = y.strictString(entry.node, [name], `quote the value: ${name}: "..."`);
      if (value !== null && value.includes('\0')) {
        // Node refuses it in every step's environment (`... must be a string without null bytes`).
        y.problem(
          entry.node,
          [name],
          'holds a NUL character (`\\0`), which no environment variable can: every job would fail',
        );
        continue;
      }
      if (value !== null) secrets[name] = value;
    }
  }
  if (y.problems.length === 0) return { secrets };
  const where = y.problems.map((p) => `${p.file}${p.line ? `:${p.line}` : ''}: ${p.message}`);
  return refused(`${where.join('; ')}; until it is fixed no secrets are given to any job`);
}

const refused = (problem: string): LoadedSecrets => ({ secrets: {}, problem });
