import fs from 'node:fs';

/**
 * The Node flags a program's shebang asks for (`#!/usr/bin/env -S node <flags>`), so that a
 * launcher that runs it as `node <flags> <file>` gets the same process as running the file
 * itself. The coordinator's shebang is the one place its flags are written (docs/operations.md).
 */
export function shebangNodeFlags(file: string): string[] {
  const first = fs.readFileSync(file, 'utf8').split('\n', 1)[0] ?? '';
  const match = /^#!\S*(?:\/env(?: -S)? )?node(?: (.*))?$/.exec(first);
  if (!match) throw new Error(`${file} does not start with a node shebang`);
  return (match[1] ?? '').split(' ').filter(Boolean);
}
