import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { shebangNodeFlags } from '../../../scripts/lib/node-flags.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

/**
 * The coordinator's Node flags are written once, in its shebang; every documented way of
 * starting it must pass the same flags (docs/operations.md, "Memory").
 */
describe("the coordinator's node flags", () => {
  const flags = shebangNodeFlags(path.join(ROOT, 'coordinator/src/cli/main.ts'));

  it('are in the shebang', () => {
    expect(flags).toEqual(['--max-semi-space-size=4']);
  });

  it('are passed by the root `coordinator` script', () => {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.coordinator).toContain(`node ${flags.join(' ')} `);
  });

  it('are what README.md says ./drover-coordinator runs, which reads them from the first line of its program', () => {
    expect(read('README.md')).toContain(
      `\`./drover-coordinator\` is \`node ${flags.join(' ')} coordinator/dist/cli/main.js\``,
    );
    expect(read('drover-coordinator')).toContain('launch.sh" drover-coordinator coordinator/dist/cli/main.js');
    expect(read('scripts/lib/launch.sh')).toContain('IFS= read -r first <"$program"');
  });

  it('are passed by the systemd unit in docs/operations.md', () => {
    expect(read('docs/operations.md')).toContain(
      `ExecStart=/usr/bin/node ${flags.join(' ')} /opt/drover/coordinator/dist/cli/main.js start`,
    );
  });
});

describe('shebangNodeFlags', () => {
  const at = (line: string) => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'drover-shebang-')), 'main.js');
    fs.writeFileSync(file, `${line}\nconsole.log(1);\n`);
    try {
      return shebangNodeFlags(file);
    } finally {
      fs.rmSync(path.dirname(file), { recursive: true });
    }
  };
  it('reads env -S, env and direct node shebangs', () => {
    expect(at('#!/usr/bin/env -S node --a=1 --b')).toEqual(['--a=1', '--b']);
    expect(at('#!/usr/bin/env node')).toEqual([]);
    expect(at('#!/usr/local/bin/node --x')).toEqual(['--x']);
  });
  it('refuses a file without a node shebang', () => {
    expect(() => at('console.log(0);')).toThrow('does not start with a node shebang');
  });
});
