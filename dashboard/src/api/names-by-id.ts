import { keepPreviousData, queryOptions } from '@tanstack/react-query';
import { api, apiPath } from './client';

/** The longest name an agent or a trigger may have, in characters (the coordinator refuses a longer `q`). */
const MAX_NAME_LENGTH = 255;

/**
 * A text to find in names, as the coordinator takes it (`q`): its first MAX_NAME_LENGTH characters
 * (code points, never half an emoji), where a longer one (an address typed or shared) was refused,
 * and the page showed the refusal without its filters.
 */
export const nameText = (text: string): string => [...text].slice(0, MAX_NAME_LENGTH).join('');

/** The most agents or triggers a list of choices shows at once: more are found by typing more of the name. */
export const CHOICES = 50;

/** The most ids one read of a list names (`?id=`; the coordinator's AGENTS_MAX_IDS and TRIGGERS_MAX_IDS). */
const NAMES_PER_READ = 200;
/** What the coordinator takes as an id (an audit entry's metadata may hold anything). */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The ids among these that the coordinator takes, each once, in order (a stable query key). */
const idsOf = (ids: Iterable<string | null | undefined>): string[] =>
  [...new Set([...ids].filter((id): id is string => !!id && UUID.test(id)))].sort();

/**
 * The names of the agents or triggers of these ids (`GET /orgs/:orgId/<list>?id=…`, 200 ids a
 * read); an id of none (a deleted trigger) has no name.
 */
export async function readNames(
  orgId: string,
  list: 'agents' | 'triggers',
  ids: Iterable<string | null | undefined>,
): Promise<Map<string, string>> {
  const wanted = idsOf(ids);
  const names = new Map<string, string>();
  for (let i = 0; i < wanted.length; i += NAMES_PER_READ) {
    const query = new URLSearchParams(wanted.slice(i, i + NAMES_PER_READ).map((id) => ['id', id]));
    const read =
      list === 'agents' ? apiPath`/orgs/${orgId}/agents?${query}` : apiPath`/orgs/${orgId}/triggers?${query}`;
    for (const item of await api<{ id: string; name: string }[]>('GET', read)) names.set(item.id, item.name);
  }
  return names;
}

/**
 * The names of the agents or triggers of these ids (readNames): what a page of jobs, batches,
 * triggers or audit entries reads to name the ones it shows, where it read every one of the
 * organization before (1.7 MB for 5,000 agents). Under the list's key: a change made in this
 * dashboard refreshes it; the previous names are kept while the next ids are read.
 */
export const namesByIdQuery = (
  orgId: string,
  list: 'agents' | 'triggers',
  ids: Iterable<string | null | undefined>,
  refetchInterval: number | false,
) => {
  const wanted = idsOf(ids);
  return queryOptions({
    queryKey: ['orgs', orgId, list, { names: wanted }],
    queryFn: () => readNames(orgId, list, wanted),
    enabled: wanted.length > 0,
    placeholderData: keepPreviousData,
    refetchInterval,
  });
};
