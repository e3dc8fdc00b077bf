import { useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState, type FormEvent } from 'react';
import { api, apiPath } from '../api/client';
import { enrollmentTokensKey } from '../api/enrollment-tokens';
import type { Answer, RequestBody } from '@drover/shared/api';
import { shellQuote } from '../lib/shell';
import { CopyBlock } from './CopyBlock';
import { ErrorMessage } from './ErrorMessage';
import { dateTime } from './time';

const EXPIRIES = [
  { seconds: 3600, label: '1 hour' },
  { seconds: 86_400, label: '1 day' },
  { seconds: 7 * 86_400, label: '7 days' },
];

/** The commands that install the agent's single binary on a machine and enroll it with `token`. */
export function enrollCommand(origin: string, token: string): string {
  return [
    'sudo install -m 755 drover-agent /usr/local/bin/drover-agent',
    `drover-agent enroll --url ${shellQuote(origin)} --token ${shellQuote(token)}`,
    'drover-agent run',
  ].join('\n');
}

/** Creates a single-use enrollment token and shows the command that enrolls a machine with it. */
export function EnrollAgent({ orgId }: { orgId: string }) {
  const [name, setName] = useState('');
  const [expiresInSeconds, setExpires] = useState(3600);
  const queryClient = useQueryClient();
  const create = useMutation({
    mutationFn: () =>
      api<Answer<'createEnrollmentToken', 201>>('POST', apiPath`/orgs/${orgId}/enrollment-tokens`, {
        body: {
          expiresInSeconds,
          ...(name.trim() ? { name: name.trim() } : {}),
        } satisfies RequestBody<'createEnrollmentToken'>,
      }),
    // The list of tokens (the Agents page's) shows the new one.
    onSuccess: () => queryClient.invalidateQueries({ queryKey: enrollmentTokensKey(orgId) }),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <section aria-labelledby="enroll-heading" className="panel">
      <h2 id="enroll-heading">Enroll an agent</h2>
      <p>
        An agent joins this organization once, with a single-use enrollment token. Create one, then run the command on
        the machine.
      </p>
      <form onSubmit={submit} className="inline-form">
        <label>
          Label (optional)
          <input value={name} onChange={(e) => setName(e.target.value)} placeholder="edge machines" />
        </label>
        <label>
          Valid for
          <select value={expiresInSeconds} onChange={(e) => setExpires(Number(e.target.value))}>
            {EXPIRIES.map((x) => (
              <option key={x.seconds} value={x.seconds}>
                {x.label}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" disabled={create.isPending}>
          Create enrollment token
        </button>
      </form>
      <ErrorMessage error={create.error} />
      {create.data && (
        <div className="enroll-result">
          <p>
            Token created; it works once, until {dateTime(create.data.expiresAt)}, and is shown only now. Copy the{' '}
            <code>drover-agent</code> binary to the machine (build it with{' '}
            <code>pnpm --filter @drover/agent build:binary</code>: <code>agent/dist/drover-agent</code>), then run:
          </p>
          <CopyBlock
            label="Install and enroll command"
            text={enrollCommand(window.location.origin, create.data.token)}
          />
          <p className="hint">
            Without <code>--name</code> the agent is named after the machine&apos;s hostname. It appears in the list
            once enrolled, and shows as connected while <code>drover-agent run</code> holds its stream open. Workflows
            are YAML files in its state directory&apos;s <code>workflows/</code> folder.
          </p>
        </div>
      )}
    </section>
  );
}
