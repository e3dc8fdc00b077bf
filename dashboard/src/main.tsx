import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { RouterProvider } from 'react-router';
import { ApiError, setUnauthorizedHandler } from './api/client';
import { createAppRouter } from './router';
import './styles.css';

const queryClient = new QueryClient({
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

// A session that ended (expired, signed out elsewhere) sends the browser back to sign-in, and
// nothing read with it stays in memory.
setUnauthorizedHandler(() => {
  if (window.location.pathname === '/login') return;
  queryClient.clear();
  const next = window.location.pathname + window.location.search;
  void router.navigate(`/login?reason=expired&next=${encodeURIComponent(next)}`, { replace: true });
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
