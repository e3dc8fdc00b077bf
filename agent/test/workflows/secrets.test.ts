import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadSecrets } from '../../src/workflows/secrets.js';

let stateDir: string;
let file: string;
beforeEach(() => {
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-secrets-'));
  file = path.join(stateDir, 'secrets.yaml');
});
afterEach(() => fs.rmSync(stateDir, { recursive: true, force: true }));

const write = (text: string, mode = 0o600) => {
  fs.writeFileSync(file, text, { mode });
  fs.chmodSync(file, mode);
};

describe('loadSecrets', () => {
  it('reads NAME: value pairs from a 0600 file', async () => {
    write('DEPLOY_TOKEN: "s3cr3t"\nDB_PASSWORD: p@ss word\nEMPTY: ""\nMULTI: |\n  line 1\n  line 2\n');
    expect(await loadSecrets(stateDir)).toEqual({
      secrets: { DEPLOY_TOKEN: 's3cr3t', DB_PASSWORD: 'p@ss word', EMPTY: '', MULTI: 'line 1\nline 2\n' },
    });
  });

  it('treats a missing or empty file as no secrets, not as a problem', async () => {
    expect(await loadSecrets(stateDir)).toEqual({ secrets: {} });
    write('# nothing yet\n');
    expect(await loadSecrets(stateDir)).toEqual({ secrets: {} });
  });

  it('refuses a file other users can read, telling the technician to chmod 600 it', async () => {
    write('TOKEN: "x"\n', 0o644);
    const loaded = await loadSecrets(stateDir);
    expect(loaded.secrets).toEqual({});
    expect(loaded.problem).toBe(
      `${file} can be read by other users (mode 0644); run \`chmod 600 ${file}\`; until then no secrets are given to any job`,
    );
    fs.chmodSync(file, 0o640);
    expect((await loadSecrets(stateDir)).problem).toMatch(/mode 0640/);
  });

  it('refuses the whole file for a value that is not a string, naming the line but never the value', async () => {
    write('GOOD: "x"\nPIN: 0123\nLIST: [a]\nKEY: 987654321\nON: true\n');
    const loaded = await loadSecrets(stateDir);
    expect(loaded.secrets).toEqual({});
    expect(loaded.problem).not.toMatch(/123|987654321|true/);
    expect(loaded.problem).toBe(
      'secrets.yaml:2: PIN: expected a string (quote the value: PIN: "..."), got a number; ' +
        'secrets.yaml:3: LIST: expected a string (quote the value: LIST: "..."), got a list; ' +
        'secrets.yaml:4: KEY: expected a string (quote the value: KEY: "..."), got a number; ' +
        'secrets.yaml:5: ON: expected a string (quote the value: ON: "..."), got a boolean; ' +
        'until it is fixed no secrets are given to any job',
    );
  });

  it('refuses a value written unquoted after `!`, a YAML tag the parser dropped, never naming the value', async () => {
    // It read `!Sup3rS3cret` as the empty string and `!pass word123` as `word123`, without a word.
    write('GOOD: "x"\nDB_PASSWORD: !Sup3rS3cret\nTOKEN: !pass word123\nBLOB: !!binary aGVsbG8=\n');
    const loaded = await loadSecrets(stateDir);
    expect(loaded.secrets).toEqual({});
    expect(loaded.problem).not.toMatch(/Sup3r|pass|word123|aGVs/);
    expect(loaded.problem).toBe(
      "secrets.yaml:2: invalid YAML: a value starts with `!`, which YAML reads as a tag, not as text: quote the value ('!...'); " +
        "secrets.yaml:3: invalid YAML: a value starts with `!`, which YAML reads as a tag, not as text: quote the value ('!...'); " +
        'secrets.yaml:4: BLOB: expected a string (quote the value: BLOB: "..."), got an unsupported value; ' +
        'until it is fixed no secrets are given to any job',
    );
    write('DB_PASSWORD: "!Sup3rS3cret"\nTOKEN: \'!pass word123\'\n');
    expect(await loadSecrets(stateDir)).toEqual({ secrets: { DB_PASSWORD: '!Sup3rS3cret', TOKEN: '!pass word123' } });
  });

  it('refuses the whole file for a value holding a NUL character, which no environment variable can, never naming the value', async () => {
    write('GOOD: "x"\nTOKEN: "s3cr\\0t"\n');
    const loaded = await loadSecrets(stateDir);
    expect(loaded).toEqual({
      secrets: {},
      problem:
        'secrets.yaml:2: TOKEN: holds a NUL character (`\\0`), which no environment variable can: every job would fail; ' +
        'until it is fixed no secrets are given to any job',
    });
  });

  it('refuses a file that is not UTF-8 (a Latin-1 value), naming the line, rather than give a job a mangled value', async () => {
    // `pässwort` saved as Latin-1: the ä is the single byte 0xe4, which UTF-8 cannot read.
    const latin1 = Buffer.concat([
      Buffer.from('GOOD: "x"\nDB_PASS: "p'),
      Buffer.from([0xe4]),
      Buffer.from('sswort"\n'),
    ]);
    fs.writeFileSync(file, latin1, { mode: 0o600 });
    expect(await loadSecrets(stateDir)).toEqual({
      secrets: {},
      problem:
        'secrets.yaml:2: the file is not UTF-8 text (save it as UTF-8; Latin-1 is not read); ' +
        'until it is fixed no secrets are given to any job',
    });
    // The same value as UTF-8, with the byte order mark some editors write, is read as it is.
    fs.writeFileSync(file, `\ufeffDB_PASS: "pässwort"\n`, { mode: 0o600 });
    expect(await loadSecrets(stateDir)).toEqual({ secrets: { DB_PASS: 'pässwort' } });
  });

  it('refuses invalid YAML and names that cannot be environment variables', async () => {
    write('A: "x"\nA: "y"\n');
    expect((await loadSecrets(stateDir)).problem).toMatch(/^secrets\.yaml:2: invalid YAML: the key `A` stands twice/);
    write('MY-TOKEN: "x"\n');
    expect((await loadSecrets(stateDir)).problem).toMatch(/^secrets\.yaml:1: `MY-TOKEN` is not a valid secret name/);
    write('__proto__: "x"\n');
    expect((await loadSecrets(stateDir)).problem).toMatch(/^secrets\.yaml:1: `__proto__` cannot be a secret name/);
    write('- a\n- b\n');
    expect((await loadSecrets(stateDir)).problem).toMatch(/^secrets\.yaml:1: expected a map/);
  });
});
