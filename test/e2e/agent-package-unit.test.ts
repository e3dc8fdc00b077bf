import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The systemd units the Debian packages install (scripts/package), read as text: what systemd
 * would do with them is for packages.test.ts (systemd-analyze), which needs the tools.
 */
const unit = (name: string) =>
  fs.readFileSync(fileURLToPath(new URL(`../../packaging/deb/${name}/${name}.service`, import.meta.url)), 'utf8');

describe("the packages' systemd units", () => {
  it.each(['drover-agent', 'drover-coordinator'])(
    '%s starts without its environment file: a conffile deleted by hand is not restored on upgrade',
    (name) => {
      const lines = unit(name)
        .split('\n')
        .filter((line) => line.startsWith('EnvironmentFile='));
      expect(lines.length).toBeGreaterThan(0);
      // `-`: a missing file is skipped, where without it the service would not start at all.
      for (const line of lines) expect(line).toMatch(/^EnvironmentFile=-\/etc\/drover\/\S+\.env$/);
    },
  );

  it.each(['drover-agent', 'drover-coordinator'])(
    '%s is not restarted after exit status 2, a bad setting that a restart would refuse again',
    (name) => {
      expect(unit(name)).toMatch(/^Restart=on-failure$/m);
      expect(unit(name)).toMatch(/^RestartPreventExitStatus=2$/m);
    },
  );

  it('runs the agent as drover-agent, the user its state directory and the docs name', () => {
    expect(unit('drover-agent')).toMatch(/^User=drover-agent$/m);
  });
});
