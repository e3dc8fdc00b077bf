import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/program.js';
import { fakeCoordinator, type FakeCoordinator } from './fake-coordinator.js';
import { signedInHome } from './signed-in.js';
import { testRuntime } from './test-runtime.js';

/**
 * `drover trigger update --selector` without `--fanout` on a trigger that ran on an agent: the
 * batch it picks is decided from the trigger as read, so it is sent onto that version only
 * (If-Match); a trigger moved meanwhile (412) is read again and decided again. Against a loopback
 * server that answers as the coordinator does: the end-to-end tests cover the rest of the command.
 */

const ORG = '5b1c0d2e-3f4a-4b5c-8d6e-7f8091a2b3c4';
const TRIGGER = '8c2f1a3b-4d5e-4f60-9a7b-8c9d0e1f2a3b';
const PATH = `/v1/orgs/${ORG}/triggers/${TRIGGER}`;

let fake: FakeCoordinator | undefined;
let home: string | undefined;
afterEach(async () => {
  await fake?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

/** The coordinator's trigger: on an agent at first, moved onto a selector by someone else once a PATCH arrives if `movedMeanwhile`. */
async function coordinator(movedMeanwhile: boolean) {
  let trigger: Record<string, unknown> = {
    id: TRIGGER,
    name: 'deploy',
    agentId: '11111111-2222-4333-8444-555555555555',
    agentSelector: null,
    fanout: null,
    updatedAt: '2026-12-03T07:00:00.000Z',
  };
  let patches = 0;
  fake = await fakeCoordinator({
    [`GET ${PATH}`]: () => [200, trigger],
    [`PATCH ${PATH}`]: ({ headers, body }) => {
      if (movedMeanwhile && ++patches === 1) {
        trigger = {
          ...trigger,
          agentId: null,
          agentSelector: 'role=build',
          fanout: 'one',
          updatedAt: '2026-12-03T07:00:01.000Z',
        };
      }
      if (headers['if-match'] !== undefined && headers['if-match'] !== `"${String(trigger.updatedAt)}"`) {
        return [412, { code: 'precondition_failed', message: 'The trigger changed since that version' }];
      }
      trigger = { ...trigger, ...(body as Record<string, unknown>), agentId: null };
      return [200, trigger];
    },
  });
  home = signedInHome(fake.url);
  return { env: { XDG_CONFIG_HOME: home, DROVER_ORG: ORG } };
}

/** The requests made: method, If-Match and body. */
const seen = () => fake!.calls.map((call, i) => [call.split(' ')[0], fake!.headers[i]!['if-match'], fake!.bodies[i]]);

async function cli(args: string[], env: Record<string, string>) {
  const rt = testRuntime({ env });
  const code = await runCli(args, rt);
  return { code, stdout: rt.stdout(), stderr: rt.stderr() };
}

describe('drover trigger update --selector without --fanout', () => {
  it('makes a trigger on an agent a batch, onto the version it read', async () => {
    const { env } = await coordinator(false);
    const res = await cli(['trigger', 'update', TRIGGER, '--selector', 'role=gateway'], env);
    expect(res).toMatchObject({ code: 0, stdout: `Changed the trigger deploy (${TRIGGER}): agentSelector, fanout\n` });
    expect(seen().filter(([method]) => method === 'PATCH')).toEqual([
      ['PATCH', '"2026-12-03T07:00:00.000Z"', { agentSelector: 'role=gateway', fanout: 'all' }],
    ]);
  });

  it('reads the trigger again when it moved meanwhile, and keeps the fanout it has now', async () => {
    const { env } = await coordinator(true);
    const res = await cli(['trigger', 'update', TRIGGER, '--selector', 'role=gateway'], env);
    expect(res).toMatchObject({ code: 0, stdout: `Changed the trigger deploy (${TRIGGER}): agentSelector\n` });
    expect(seen()).toEqual([
      ['GET', undefined, null],
      ['PATCH', '"2026-12-03T07:00:00.000Z"', { agentSelector: 'role=gateway', fanout: 'all' }],
      ['GET', undefined, null],
      ['PATCH', undefined, { agentSelector: 'role=gateway' }],
    ]);
  });
});
