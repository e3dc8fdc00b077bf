import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowDefinition } from '@drover/shared';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { enrollTestAgent } from '../helpers/agent.js';
import { runAgentCli } from '../helpers/agent-cli.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const EXAMPLES = path.join(REPO, 'agent/examples/workflows');

/** Every kind of value a workflow file can hold, so that the coordinator judges all of them. */
const RICH = `name: release.v2
description: |
  Builds a release.
  Two lines of description.
version: 2026.11
params:
  - {name: tag, type: string, required: true, pattern: '^v[0-9]+\\.[0-9]+$', description: the tag}
  - {name: replicas, type: number, min: 1, max: 9, default: 3}
  - {name: dry_run, type: boolean, default: true}
  - {name: channel, type: enum, options: [stable, beta], default: beta}
secrets: [RELEASE_TOKEN, SIGNING_KEY]
timeout: 2h
steps:
  - name: build
    run: make
    args: [release, -j, 8]
    env: {GOFLAGS: -mod=vendor, RETRIES: 3, VERBOSE: true}
    cwd: src
    timeout: 45m
  - run: ./publish.sh --tag "$DROVER_PARAM_TAG"
    shell: true
    timeout: 500ms
`;

describe('drover-agent workflows (the real CLI) and the coordinator', () => {
  let t: TestCoordinator;
  let scratch: string;
  beforeAll(async () => {
    t = await startTestCoordinator();
    scratch = makeTempDir('drover-agent-workflows-');
  });
  afterAll(async () => {
    await t?.close();
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('produces definitions the coordinator accepts as they are', async () => {
    const dir = path.join(scratch, 'rich');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'release.yaml'), RICH);
    fs.copyFileSync(path.join(EXAMPLES, 'hello.yaml'), path.join(dir, 'hello.yaml'));
    const run = await runAgentCli(['workflows', '--state-dir', scratch, '--workflows-dir', dir, '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const listed = JSON.parse(run.stdout) as { workflows: { file: string; definition: WorkflowDefinition }[] };
    const definitions = listed.workflows.map((w) => w.definition);
    expect(definitions.map((d) => d.name)).toEqual(['hello', 'release.v2']);
    expect(definitions[1]).toMatchObject({
      version: '2026.11',
      timeout: 7_200_000,
      secretsKeys: ['RELEASE_TOKEN', 'SIGNING_KEY'],
      steps: [
        { env: { RETRIES: '3', VERBOSE: 'true' }, timeout: 2_700_000 },
        { shell: true, timeout: 500 },
      ],
    });

    const agent = await enrollTestAgent(t.owner, t.orgId);
    const put = await agent.putWorkflows(definitions);
    expect(put.status).toBe(200);
    expect(put.body.workflows.map((w: { name: string }) => w.name)).toEqual(['hello', 'release.v2']);
    const stored = put.body.workflows.find((w: { name: string }) => w.name === 'release.v2');
    expect(stored.paramsSchema).toEqual(definitions[1]!.paramsSchema);
  });

  it('reports invalid files as file:line: message and exits 1, listing the valid ones', async () => {
    const dir = path.join(scratch, 'mixed');
    fs.mkdirSync(dir);
    fs.copyFileSync(path.join(EXAMPLES, 'hello.yaml'), path.join(dir, 'hello.yaml'));
    fs.writeFileSync(
      path.join(dir, 'deploy.yaml'),
      'name: deploy\nsteps:\n  - run: make\n  - run: ship\n    timeout: soon\n',
    );
    fs.writeFileSync(path.join(dir, 'copy.yml'), 'name: hello\nsteps: [{run: echo}]\n');
    const run = await runAgentCli(['workflows', '--state-dir', scratch, '--workflows-dir', dir]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('No valid workflows in');
    expect(run.stdout).toContain(
      [
        '3 invalid files skipped:',
        '  copy.yml:1: name: the workflow `hello` is also defined in hello.yaml; both files are skipped until the names differ',
        '  deploy.yaml:5: steps[1].timeout: expected a duration like 30s, 5m or a number of seconds, got `soon`',
        '  hello.yaml:3: name: the workflow `hello` is also defined in copy.yml; both files are skipped until the names differ',
      ].join('\n'),
    );
  });
});
