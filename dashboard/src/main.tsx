import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { RouterProvider } from 'react-router';
import { ApiError, sessionEnded } from './api/client';
import { returnFocusWhenEnabled } from './lib/keep-focus';
import { setSessionEnded } from './lib/session';
import { keepTitleToHeading } from './lib/title';
import { createAppRouter } from './router';
import './styles.css';

// A session that ended (expired, signed out in another tab) is met by a background read (a page
// refreshing itself) or by something the user did (a mutation: a form sent, a button). The first
// keeps the page, and what was typed in it, under a banner that leads to sign-in (Shell.tsx); the
// second returns to sign-in at once, and nothing read with the session stays in memory.
const queryClient: QueryClient = new QueryClient({
  queryCache: new QueryCache({
    onError: (error) => {
      if (sessionEnded(error)) setSessionEnded(true);
    },
    onSuccess: () => setSessionEnded(false),
  }),
  mutationCache: new MutationCache({
    onError: (error) => {
      if (sessionEnded(error)) returnToSignIn();
    },
  }),
  defaultOptions: {
    queries: {
      // A refused call (4xx) will be refused again: only the unreachable and 5xx are retried.
      retry: (count, error) =>
        count < 2 && !(error instanceof ApiError && error.statusCode >= 400 && error.statusCode < 500),
      refetchOnWindowFocus: true,
    },
  },
});
const router = createAppRouter();

function returnToSignIn(): void {
  setSessionEnded(false);
  if (window.location.pathname === '/login') return;
  queryClient.clear();
  const next = window.location.pathname + window.location.search;
  void router.navigate(`/login?reason=expired&next=${encodeURIComponent(next)}`, { replace: true });
}

const root = document.getElementById('root')!;
keepTitleToHeading(root);
returnFocusWhenEnabled(root);
createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
