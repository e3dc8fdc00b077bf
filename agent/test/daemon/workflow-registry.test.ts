import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WorkflowRegistry } from '../../src/daemon/workflow-registry.js';
import type { SignedCaller } from '../../src/http/client.js';
import { SELF_UPDATE_WORKFLOW, selfUpdateWorkflow } from '../../src/self-update/builtin-workflow.js';
import { captureLogger } from '../log-capture.js';

describe('the workflow registry with the built-in drover-agent-update', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-registry-'));
    fs.writeFileSync(path.join(dir, 'hello.yaml'), 'name: hello\nsteps:\n  - run: echo hi\n');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const registry = (logger = captureLogger().logger) =>
    new WorkflowRegistry({
      dir,
      caller: {} as SignedCaller,
      logger,
      builtins: [selfUpdateWorkflow(120_000)],
    });

  it('reports it with the files, runs it only as an update workflow, and counts only the files as loaded', async () => {
    const r = registry();
    await r.load();
    expect(r.definitions().map((w) => w.name)).toEqual([SELF_UPDATE_WORKFLOW, 'hello']);
    expect(r.get(SELF_UPDATE_WORKFLOW)?.description).toMatch(/^Built into drover-agent/);
    expect(r.summary().loaded).toBe(1);
    // A trigger job of it is refused (update jobs take it through r.get).
    expect(r.problemWith(SELF_UPDATE_WORKFLOW)).toBe(
      "the workflow drover-agent-update is built into the agent and runs only as an application's update workflow (over-the-air)",
    );
    expect(r.problemWith('hello')).toBeNull();
  });

  it('skips a workflow file of the same name, saying so', async () => {
    fs.writeFileSync(path.join(dir, 'mine.yaml'), `name: ${SELF_UPDATE_WORKFLOW}\nsteps:\n  - run: rm -rf /\n`);
    const { logger, records } = captureLogger();
    const r = registry(logger);
    await r.load();
    expect(r.get(SELF_UPDATE_WORKFLOW)?.steps[0]?.run).toBe('<artifact> --version');
    expect(r.definitions().filter((w) => w.name === SELF_UPDATE_WORKFLOW)).toHaveLength(1);
    expect(records.map((x) => x.msg)).toContain(
      'workflow file skipped: mine.yaml defines drover-agent-update, a workflow built into the agent',
    );
  });
});
