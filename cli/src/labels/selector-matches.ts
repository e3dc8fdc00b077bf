import { nearestName } from '@drover/shared';
import type { Schema } from '@drover/shared/api';
import type { SessionCaller } from '../callers.js';
import { formatFields } from '../output/table.js';
import { selectorRefusal } from './selector.js';

/** What a selector matches now, as `GET /v1/orgs/:orgId/selector-matches` answers it. */
export type SelectorMatches = Schema<'SelectorMatches'>;
type ParamSpec = Schema<'WorkflowParam'>;

/**
 * What `selector` matches now, worked out by the coordinator (docs/fleets.md, "Selectors"): how
 * many agents (revoked ones aside) and the first of their names, those lacking `workflowName`, the
 * workflows they report and that workflow's versions. Not the fleet read to count it. A selector
 * the coordinator refuses is its 422 with a caret under the position.
 */
export async function readSelectorMatches(
  caller: SessionCaller,
  selector: string,
  workflowName: string | undefined,
): Promise<SelectorMatches> {
  try {
    return await caller.api.get<SelectorMatches>(`/orgs/${await caller.orgId()}/selector-matches`, {
      selector,
      workflowName,
    });
  } catch (error) {
    throw selectorRefusal(error, selector);
  }
}

/** `14 agents`, `1 agent`, `no agent`. */
export const agentCount = (n: number) => (n === 0 ? 'no agent' : `${n} agent${n === 1 ? '' : 's'}`);

/** The names the answer gives, and how many more there are: `gw-1, gw-2 and 12 more`. */
function names(shown: readonly string[], total: number): string {
  const more = total - shown.length;
  return `${shown.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
}

/** `who*:string count:number`, `no params`. */
function params(schema: ParamSpec[] | null): string {
  if (!schema || schema.length === 0) return 'no params';
  return schema.map((p) => `${p.name}${p.required ? '*' : ''}:${p.type}`).join(' ');
}

/**
 * The `label: value` lines of what a selector matches: the agents, and with a workflow those that
 * do not report it (a batch's job on each is rejected, docs/fleets.md) and its versions by params;
 * then the workflows they report.
 */
export function matchFields(
  m: SelectorMatches,
  workflowName: string | undefined,
): (readonly [string, string | null | undefined])[] {
  const fields: (readonly [string, string | null | undefined])[] = [
    ['Matches', m.matching === 0 ? 'no agent now' : `${agentCount(m.matching)}: ${names(m.names, m.matching)}`],
  ];
  if (workflowName !== undefined && m.matching > 0) {
    let lacking = `${workflowName}: every one of them reports it`;
    if (m.lacking === m.matching) {
      const near = nearestName(workflowName, m.workflowNames);
      lacking = `${workflowName}: none of them reports it (their jobs would be rejected)${near ? ` (did you mean ${near}?)` : ''}`;
    } else if (m.lacking > 0) {
      lacking = `${workflowName}: ${m.lacking} of them do not report it (their jobs would be rejected): ${names(m.lackingNames, m.lacking)}`;
    }
    fields.push(['Workflow', lacking]);
    if (m.versions.length > 0) {
      fields.push([
        m.versions.length === 1 ? 'Version' : 'Versions',
        m.versions
          .map((w) =>
            w.version === null ? `no version (${params(w.paramsSchema)})` : `v${w.version} (${params(w.paramsSchema)})`,
          )
          .join(', '),
      ]);
    }
  }
  if (m.matching > 0) fields.push(['Workflows', m.workflowNames.join(', ') || 'none reported']);
  return fields;
}

/** What `selector` matches, as `label: value` lines. */
export const formatSelectorMatches = (selector: string, m: SelectorMatches, workflowName: string | undefined) =>
  formatFields([['Selector', selector], ...matchFields(m, workflowName)]);
