import type { Schema } from '@drover/shared/api';
import type { SessionCaller } from '../callers.js';
import { findApp, isUuid, pick } from '../session/lookups.js';

type Release = Schema<'Release'>;

/** `/orgs/:orgId/apps/:appId/releases` of the application named by slug or id. */
export async function releasesPath(caller: SessionCaller, app: string): Promise<string> {
  return `/orgs/${await caller.orgId()}/apps/${(await findApp(caller, app)).id}/releases`;
}

/** The id of the release `value` names under `base`: an id as it is, or a version no other release has. */
export async function releaseId(caller: SessionCaller, base: string, value: string): Promise<string> {
  if (isUuid(value)) return value;
  return pick(await caller.api.get<Release[]>(base), value, 'release', (r) => r.version).id;
}

/** The release `value` names under `base` (its id, or a version no other release has), as the API shows it. */
export async function findRelease(caller: SessionCaller, base: string, value: string): Promise<Release> {
  if (isUuid(value)) return caller.api.get<Release>(`${base}/${value}`);
  return pick(await caller.api.get<Release[]>(base), value, 'release', (r) => r.version);
}
