import { agentSearchQuery } from '../api/agent-pages';
import type { Agent } from '../api/types';
import { SearchPicker, type PickerWords } from './SearchPicker';

const WORDS: PickerWords = {
  label: 'Agent',
  find: 'Find an agent',
  placeholder: 'name or hostname',
  one: 'agent',
  many: 'agents',
};

/**
 * A choice of one agent among a fleet's thousands: the AGENT_PICKS agents whose name or hostname
 * holds what is typed (SearchPicker).
 */
export function AgentPicker(props: {
  orgId: string;
  /** The chosen agent's id, or '' for none. */
  value: string;
  /** Its name, when known (else its short id stands in). */
  valueName: string | undefined;
  onChange: (id: string) => void;
  /** What the select says for no agent. */
  none: string;
  /** Revoked agents are not offered (a trigger's agent), unless chosen already. */
  active?: boolean;
  /** The select as a form's field: its id (labelled by the form), and what says it is invalid. */
  select?: { id: string; 'aria-invalid'?: boolean; 'aria-describedby'?: string };
}) {
  const { orgId, active, ...rest } = props;
  return (
    <SearchPicker
      {...rest}
      search={(text) => agentSearchQuery(orgId, text)}
      words={WORDS}
      {...(active ? { offered: (agent: Agent) => agent.status !== 'revoked' } : {})}
    />
  );
}
