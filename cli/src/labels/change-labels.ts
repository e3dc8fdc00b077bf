import type { RequestBody, Schema } from '@drover/shared/api';
import { isDeepStrictEqual } from 'node:util';
import type { SessionCaller } from '../callers.js';
import { ApiError } from '../errors.js';
import { applyLabelChanges, type LabelChanges } from './changes.js';

type Agent = Schema<'Agent'>;

/** How many times a label change is made again onto an agent others changed meanwhile. */
const LABEL_ATTEMPTS = 5;

/**
 * The operators' labels of `agent` with `changes` made, sent onto the revision they were made from
 * (If-Match): when another change came in between (a 412), the agent is read again and the changes
 * made onto its labels as they are now, so that neither is lost.
 */
export async function changeLabels(caller: SessionCaller, agent: Agent, changes: LabelChanges): Promise<Agent> {
  const path = `/orgs/${await caller.orgId()}/agents/${agent.id}`;
  for (let attempt = 1; ; attempt++) {
    const labels = applyLabelChanges(agent.operatorLabels, changes);
    if (isDeepStrictEqual(labels, agent.operatorLabels)) return agent;
    try {
      const body: RequestBody<'updateAgent'> = { labels };
      // A coordinator older than revisions answers none (during an upgrade): the change is made onto the agent as it is.
      const headers: Record<string, string> =
        typeof agent.revision === 'number' ? { 'if-match': `"${agent.revision}"` } : {};
      return (await caller.api.call<Agent>('PATCH', path, { body, headers })).body;
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 412) || attempt === LABEL_ATTEMPTS) throw error;
      agent = await caller.api.get<Agent>(path);
    }
  }
}
