import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemonRig, type AgentStateDir, type DaemonRig } from '../helpers/agent-daemon.js';
import { eventually } from '../helpers/poll.js';
import type { TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { defaultBindingId, sha256, uploadFile } from '../helpers/storage.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * Files in and out of jobs with a real `drover-agent run` child process (CONTRACT §5; docs/agent.md,
 * "Files in and out of jobs"): a file uploaded through the public storage API is given to a job as
 * a FileRef param, downloaded and verified by the agent, read by a step; a step's `file:` output is
 * uploaded by the agent and comes back as a FileRef a token can download.
 */

let rig: DaemonRig | undefined;
let t: TestCoordinator;
let a: AgentStateDir;
let work: string;
let jobIds: string[];
let storage: ApiClient;
const triggers = new Map<string, { id: string; token: string }>();
/** Added to the coordinator's clock (a download URL's expiry is passed by moving it). */
let offsetMs = 0;

afterAll(() => rig?.close());

const WORKFLOWS = (markers: string): Record<string, string[]> => ({
  checksum: [
    'name: checksum',
    'params:',
    '  - {name: bundle, type: file, required: true}',
    'steps:',
    '  - name: hash',
    `    run: touch "${markers}/ran-$DROVER_JOB_ID"; sha256sum "$DROVER_PARAM_BUNDLE" | cut -d" " -f1 > sum`,
    '    shell: true',
    '  - name: report',
    '    run: |',
    '      echo "sum=$(cat sum)" >> "$DROVER_OUTPUT"',
    '      echo "name=$(basename "$DROVER_PARAM_BUNDLE")" >> "$DROVER_OUTPUT"',
    '      echo "where=${DROVER_PARAM_BUNDLE#$DROVER_WORKSPACE/}" >> "$DROVER_OUTPUT"',
    '      echo "content=$(cat "$DROVER_PARAM_BUNDLE")" >> "$DROVER_OUTPUT"',
    '      grep -q downloadUrl "$DROVER_PARAMS_FILE" && echo "urlInParams=yes" >> "$DROVER_OUTPUT" || true',
    '    shell: true',
  ],
  produce: [
    'name: produce',
    'steps:',
    '  - run: |',
    '      printf "made by the agent\\n" > out.txt',
    '      echo "report=file:out.txt" >> "$DROVER_OUTPUT"',
    '      echo "count=1" >> "$DROVER_OUTPUT"',
    '    shell: true',
  ],
  gate: [
    'name: gate',
    'steps:',
    `  - run: for i in $(seq 600); do [ -f "${markers}/gate" ] && break; sleep 0.05; done`,
    '    shell: true',
  ],
  escape: [
    'name: escape',
    'steps:',
    '  - run: |',
    '      ln -s /etc/hostname link',
    '      echo "leak=file:../params.json" >> "$DROVER_OUTPUT"',
    '      echo "linked=file:link" >> "$DROVER_OUTPUT"',
    '      echo "ok=yes" >> "$DROVER_OUTPUT"',
    '    shell: true',
  ],
});

beforeAll(async () => {
  rig = await startDaemonRig({
    workPrefix: 'drover-job-files-',
    workflows: WORKFLOWS,
    clock: { now: () => Date.now() + offsetMs },
  });
  ({ t, a, work, jobIds } = rig);
  const bindingId = await defaultBindingId(t);
  for (const name of Object.keys(WORKFLOWS(work))) {
    const res = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        name,
        agentId: a.agentId,
        scopeType: 'workflow',
        workflowName: name,
        responseMode: 'sync',
        responseTimeoutMs: 30_000,
      },
    });
    expect(res.status, res.text).toBe(201);
    // One token both runs the trigger and reads (and writes) the default binding.
    const { token } = await issueApiToken(t.owner, t.orgId, [
      { type: 'trigger', triggerIds: [res.body.id] },
      { type: 'storage', bindingIds: [bindingId], permissions: ['read', 'write'] },
    ]);
    triggers.set(name, { id: res.body.id, token });
  }
  storage = t.api.withToken(triggers.get('checksum')!.token);
}, 60_000);

async function run(workflow: string, params: Record<string, unknown> = {}) {
  const tr = triggers.get(workflow)!;
  const res = await t.api.post(`/triggers/${tr.id}/run`, { token: tr.token, body: { params } });
  if (typeof res.body?.jobId === 'string') jobIds.push(res.body.jobId);
  expect(res.status, res.text).toBe(200);
  expect(res.body.timedOut).toBeUndefined();
  return res.body as {
    jobId: string;
    status: string;
    exitCode: number | null;
    errorMessage: string | null;
    output: any;
  };
}

const logTexts = async (jobId: string): Promise<string[]> =>
  (await t.owner.get(`/jobs/${jobId}`)).body.logs.map((l: { text: string }) => l.text);

describe('an input file given to a job', () => {
  it('is downloaded into the workspace, verified, and read by a step through DROVER_PARAM_<NAME>', async () => {
    const data = `payload ${Date.now()}`;
    const { fileId } = await uploadFile(storage, data, {
      cleanupRule: 'ttl',
      ttlSeconds: 3600,
      filename: '../../evil name.txt',
    });
    const res = await run('checksum', { bundle: { __type: 'FileRef', id: fileId } });
    expect(res).toMatchObject({ status: 'success', exitCode: 0, errorMessage: null });
    expect(res.output).toEqual({
      sum: sha256(data),
      name: 'evil name.txt',
      where: 'inputs/bundle/evil name.txt',
      content: data,
    });
    const lines = await logTexts(res.jobId);
    expect(lines).toContain('downloading input file `bundle`: evil name.txt (' + data.length + ' B)');
    expect(lines).toContainEqual(expect.stringMatching(/^input file `bundle` ready: inputs\/bundle\/evil name.txt/));
    expect((await t.owner.get(`/jobs/${res.jobId}`)).body.params).toEqual({
      bundle: { __type: 'FileRef', id: fileId },
    });
  });

  it('fails the job before any step runs when the stored SHA-256 does not match the bytes', async () => {
    const { fileId } = await uploadFile(storage, 'genuine bytes');
    // The coordinator's record says another hash: what a tampered or corrupted blob looks like to the agent.
    await t.sql.run('UPDATE files SET sha256 = ? WHERE id = ?', 'f'.repeat(64), fileId);
    const res = await run('checksum', { bundle: { __type: 'FileRef', id: fileId } });
    expect(res).toMatchObject({ status: 'failed', exitCode: null, output: {} });
    expect(res.errorMessage).toBe(
      `input file \`bundle\` (file ${fileId}) could not be downloaded: the download does not match its ` +
        `checksum: expected SHA-256 ${'f'.repeat(64)}, got ${sha256('genuine bytes')}; no step was run`,
    );
    expect(fs.existsSync(path.join(work, `ran-${res.jobId}`))).toBe(false);
    const lines = await logTexts(res.jobId);
    expect(lines.some((l) => l.startsWith('step 1'))).toBe(false);
    expect(fs.readdirSync(path.join(a.stateDir, 'jobs', res.jobId, 'workspace', 'inputs', 'bundle'))).toEqual([]);
  });
});

describe('an input file whose URL expired while its job waited in the queue', () => {
  it('is downloaded through a fresh URL the agent asks for', async () => {
    const { fileId } = await uploadFile(storage, 'late bytes');
    const config = t.coordinator.ctx.config;
    // URLs issued from now on live 1 s; the checksum job waits longer than that behind `gate`
    // (on the coordinator's clock, moved forward while the job waits).
    t.coordinator.ctx.config = { ...config, presignTtlSeconds: 1 };
    try {
      const gated = run('gate');
      await eventually(async () => {
        const res = await t.owner.get(`/orgs/${t.orgId}/jobs?status=running`);
        return res.body.some((j: { workflowName: string }) => j.workflowName === 'gate');
      });
      const waiting = run('checksum', { bundle: { __type: 'FileRef', id: fileId } });
      await eventually(async () => {
        const res = await t.owner.get(`/orgs/${t.orgId}/jobs?status=queued`);
        return res.body.some((j: { workflowName: string }) => j.workflowName === 'checksum');
      });
      offsetMs += 2_500;
      fs.writeFileSync(path.join(work, 'gate'), '');
      expect((await gated).status).toBe('success');
      const res = await waiting;
      expect(res).toMatchObject({ status: 'success', output: { content: 'late bytes', sum: sha256('late bytes') } });
      expect(await logTexts(res.jobId)).toContainEqual(
        expect.stringMatching(
          /^download of input file `bundle` failed \(the download was refused \(HTTP 403: .*\)\); trying again/,
        ),
      );
    } finally {
      t.coordinator.ctx.config = config;
    }
  });
});

describe('an output file of a job', () => {
  it('is uploaded by the agent and comes back as a FileRef whose download URL serves the bytes', async () => {
    const res = await run('produce');
    expect(res).toMatchObject({ status: 'success', exitCode: 0, errorMessage: null });
    expect(res.output).toEqual({ report: { __type: 'FileRef', id: expect.any(String) }, count: '1' });
    const id = res.output.report.id as string;
    const meta = await storage.get(`/storage/files/${id}`);
    expect(meta.status, meta.text).toBe(200);
    expect(meta.body).toMatchObject({
      filename: 'out.txt',
      contentType: 'text/plain',
      status: 'active',
      cleanupRule: 'ttl',
    });
    const url = await storage.get(`/storage/files/${id}/download-url`);
    expect(url.status, url.text).toBe(200);
    const got = await fetch(url.body.downloadUrl);
    expect(got.status).toBe(200);
    expect(await got.text()).toBe('made by the agent\n');
    expect(await logTexts(res.jobId)).toContainEqual(
      expect.stringMatching(new RegExp(`^output \`report\` uploaded as file ${id}`)),
    );
  });

  it('is refused when its path leaves the workspace: the value is dropped and the job fails, saying why', async () => {
    const res = await run('escape');
    expect(res).toMatchObject({ status: 'failed', exitCode: null, output: { ok: 'yes' } });
    expect(res.errorMessage).toBe(
      'output `leak` (file:../params.json) is outside the job workspace; it was not uploaded; ' +
        'output `linked` (file:link) is outside the job workspace (after following symbolic links); it was not uploaded',
    );
    const list = await storage.get('/storage/files');
    expect(
      list.body.filter((f: { filename: string }) => f.filename === 'params.json' || f.filename === 'hostname'),
    ).toEqual([]);
  });
});
