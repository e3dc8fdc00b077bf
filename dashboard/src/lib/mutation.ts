import {
  useMutation as useQueryMutation,
  type DefaultError,
  type MutateOptions,
  type QueryClient,
  type UseMutationOptions,
  type UseMutationResult,
} from '@tanstack/react-query';
import { useCallback, useRef } from 'react';

/**
 * TanStack Query's `useMutation`, made safe against a double submit: while a call of this
 * mutation is in flight, `mutate` ignores another and `mutateAsync` answers the promise of the
 * one in flight. `disabled={mutation.isPending}` alone comes a render later, after a double-click
 * has already sent two requests (two jobs, two tokens); the call in flight is known here at once,
 * from a ref set synchronously. Every form of the dashboard imports `useMutation` from here.
 */
export function useMutation<TData = unknown, TError = DefaultError, TVariables = void, TOnMutateResult = unknown>(
  options: UseMutationOptions<TData, TError, TVariables, TOnMutateResult>,
  queryClient?: QueryClient,
): UseMutationResult<TData, TError, TVariables, TOnMutateResult> {
  const result = useQueryMutation(options, queryClient);
  const { mutateAsync: send } = result;
  const inFlight = useRef<Promise<TData> | null>(null);
  const mutateAsync = useCallback(
    (variables: TVariables, callOptions?: MutateOptions<TData, TError, TVariables, TOnMutateResult>) => {
      if (inFlight.current) return inFlight.current;
      const sent = send(variables, callOptions);
      inFlight.current = sent;
      const done = () => {
        if (inFlight.current === sent) inFlight.current = null;
      };
      sent.then(done, done);
      return sent;
    },
    [send],
  );
  const mutate = useCallback(
    (variables: TVariables, callOptions?: MutateOptions<TData, TError, TVariables, TOnMutateResult>) => {
      // The error is the mutation's state (`error`), as with TanStack's own `mutate`.
      mutateAsync(variables, callOptions).catch(() => undefined);
    },
    [mutateAsync],
  );
  return { ...result, mutate, mutateAsync } as UseMutationResult<TData, TError, TVariables, TOnMutateResult>;
}
