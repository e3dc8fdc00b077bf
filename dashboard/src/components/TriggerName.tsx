import { Link } from 'react-router';
import { shortId } from '@drover/shared/short-id';

/**
 * A trigger's name where a page shows its id (a job's, a batch's, an audit entry's), linked to the
 * trigger's page with `orgId`: its short id while the names load, "deleted trigger" once they are
 * read without it.
 */
export function TriggerName(props: { id: string; names: Map<string, string> | undefined; orgId?: string }) {
  const { id, names, orgId } = props;
  const name = names?.get(id);
  if (name === undefined) return <span className="hint">{names ? 'deleted trigger' : shortId(id)}</span>;
  return orgId === undefined ? name : <Link to={`/orgs/${orgId}/triggers/${id}`}>{name}</Link>;
}
