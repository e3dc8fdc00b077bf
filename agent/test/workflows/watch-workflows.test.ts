import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { watchWorkflows, type WorkflowWatcher } from '../../src/workflows/watch-workflows.js';
import { eventually, sleep } from '../../../test/helpers/poll.js';

let root: string;
let watcher: WorkflowWatcher | undefined;
let calls: number;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-watch-'));
  calls = 0;
});
afterEach(() => {
  watcher?.close();
  watcher = undefined;
  fs.rmSync(root, { recursive: true, force: true });
});

/**
 * Real time throughout: the file events come from the operating system, after a delay the test
 * cannot move; the sleeps that show nothing more happens are a few debounce periods long.
 */
const onChange = () => void calls++;

/** Waits until `onChange` has been called more than `before` times (or fails after 3 s). */
async function changedSince(before: number): Promise<void> {
  await eventually(
    () => calls > before,
    3000,
    () => `onChange called more than ${before} times (${calls})`,
  );
}

describe('watchWorkflows', () => {
  it('calls back once for a burst of changes (debounced)', async () => {
    watcher = watchWorkflows(root, onChange, { debounceMs: 100 });
    for (let i = 0; i < 5; i++) fs.writeFileSync(path.join(root, `w${i}.yaml`), 'name: x\n');
    await changedSince(0);
    await sleep(300);
    expect(calls).toBe(1);
  });

  it('sees a save done the way editors do it: write a temporary file, rename it over the old one', async () => {
    fs.writeFileSync(path.join(root, 'deploy.yaml'), 'name: old\n');
    watcher = watchWorkflows(root, onChange, { debounceMs: 50 });
    fs.writeFileSync(path.join(root, '.deploy.yaml.swp'), 'name: new\n');
    fs.renameSync(path.join(root, '.deploy.yaml.swp'), path.join(root, 'deploy.yaml'));
    await changedSince(0);
    const after = calls;
    fs.rmSync(path.join(root, 'deploy.yaml'));
    await changedSince(after);
  });

  it('waits for a directory that does not exist yet, and follows it when it is removed and made again', async () => {
    const dir = path.join(root, 'workflows');
    watcher = watchWorkflows(dir, onChange, { debounceMs: 50, pollMs: 50 });
    await sleep(150);
    expect(calls).toBe(0);
    fs.mkdirSync(dir);
    await changedSince(0);
    let before = calls;
    fs.writeFileSync(path.join(dir, 'a.yaml'), 'name: a\n');
    await changedSince(before);

    before = calls;
    fs.rmSync(dir, { recursive: true });
    await changedSince(before);
    before = calls;
    fs.mkdirSync(dir);
    await changedSince(before);
    before = calls;
    fs.writeFileSync(path.join(dir, 'b.yaml'), 'name: b\n');
    await changedSince(before);
  });

  it('sees a change to the file a workflow file links to, in its own directory, and only to that file', async () => {
    const dir = path.join(root, 'workflows');
    const app = path.join(root, 'app');
    fs.mkdirSync(dir);
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'deploy.yaml'), 'name: one\n');
    fs.symlinkSync(path.join(app, 'deploy.yaml'), path.join(dir, 'deploy.yaml'));
    watcher = watchWorkflows(dir, onChange, { debounceMs: 50 });
    fs.writeFileSync(path.join(app, 'deploy.yaml'), 'name: two\n'); // edited in place
    await changedSince(0);
    let before = calls;
    fs.writeFileSync(path.join(app, 'deploy.yaml.new'), 'name: three\n');
    fs.renameSync(path.join(app, 'deploy.yaml.new'), path.join(app, 'deploy.yaml')); // `git pull`
    await changedSince(before);
    await sleep(200);
    before = calls;
    fs.writeFileSync(path.join(app, 'README'), 'not a workflow\n');
    await sleep(300);
    expect(calls).toBe(before);
  });

  it('sees a link on the way to a workflow file point elsewhere (a `current` release switched)', async () => {
    const dir = path.join(root, 'workflows');
    fs.mkdirSync(dir);
    for (const release of ['v1', 'v2']) {
      fs.mkdirSync(path.join(root, release));
      fs.writeFileSync(path.join(root, release, 'deploy.yaml'), `name: ${release}\n`);
    }
    fs.symlinkSync(path.join(root, 'v1'), path.join(root, 'current'));
    fs.symlinkSync(path.join(root, 'current', 'deploy.yaml'), path.join(dir, 'deploy.yaml'));
    watcher = watchWorkflows(dir, onChange, { debounceMs: 50, pollMs: 50 });
    await sleep(200);
    expect(calls).toBe(0);
    fs.symlinkSync(path.join(root, 'v2'), path.join(root, 'current.new'));
    fs.renameSync(path.join(root, 'current.new'), path.join(root, 'current'));
    await changedSince(0);
  });

  it('stops calling back once closed, and survives a callback that throws', async () => {
    watcher = watchWorkflows(
      root,
      () => {
        calls++;
        throw new Error('the caller failed');
      },
      { debounceMs: 30 },
    );
    fs.writeFileSync(path.join(root, 'a.yaml'), 'x');
    await changedSince(0);
    fs.writeFileSync(path.join(root, 'b.yaml'), 'x');
    await changedSince(1);
    watcher.close();
    const before = calls;
    fs.writeFileSync(path.join(root, 'c.yaml'), 'x');
    await sleep(200);
    expect(calls).toBe(before);
  });
});
