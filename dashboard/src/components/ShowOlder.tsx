/** What a cursor-paged list needs of its TanStack infinite query to offer the next page. */
interface OlderPages {
  hasNextPage: boolean;
  isFetchingNextPage: boolean;
  fetchNextPage(): Promise<unknown>;
}

/**
 * "Show older jobs" (or the `label` given) under a list paged by cursor: loads the next page, says
 * so while it loads.
 */
export function ShowOlder({ pages, what, label }: { pages: OlderPages; what: string; label?: string }) {
  if (!pages.hasNextPage) return null;
  return (
    <button type="button" onClick={() => void pages.fetchNextPage()} disabled={pages.isFetchingNextPage}>
      {pages.isFetchingNextPage ? 'Loading…' : (label ?? `Show older ${what}`)}
    </button>
  );
}
