import { Link } from 'react-router';
import { shortId } from '@drover/shared/short-id';
import type { TriggerNames } from '../api/triggers';

/**
 * A trigger's name where a page shows its id (a job's, a batch's, an audit entry's), linked to the
 * trigger's page with `orgId`: its short id while its name loads, "deleted trigger" once the names
 * of the ids shown are read without it.
 */
export function TriggerName(props: { id: string; names: TriggerNames | undefined; orgId?: string }) {
  const { id, names, orgId } = props;
  const name = names?.names.get(id);
  if (name === undefined) return <span className="hint">{names?.complete ? 'deleted trigger' : shortId(id)}</span>;
  return orgId === undefined ? name : <Link to={`/orgs/${orgId}/triggers/${id}`}>{name}</Link>;
}
