import { useMutation } from '../lib/mutation';
import { useEffect, useRef, useState } from 'react';
import { Link, useLocation, useNavigate, useParams, useSearchParams } from 'react-router';
import { completeConnect, PROVIDER_NAMES, type ChatOutcome, type ChatProvider } from '../api/chat';
import { ErrorMessage } from '../components/ErrorMessage';
import { NotFoundPage } from './NotFoundPage';

const isProvider = (value: string | undefined): value is ChatProvider => value === 'slack' || value === 'discord';

/**
 * `/chat/:provider/finish`: where the coordinator's OAuth callback sends the browser once the
 * provider's consent page is done. The dashboard finishes the flow from here, on its own origin,
 * so that the call carries the session and the connect cookie that bind the flow to the owner and
 * the browser that started it (docs/chat.md, "Connecting a workspace"); then it shows the
 * organization's integrations page with the outcome, or says here why nothing was connected.
 */
export function ChatConnectFinishPage() {
  const { provider } = useParams();
  if (!isProvider(provider)) return <NotFoundPage />;
  return <Finish provider={provider} />;
}

function Finish({ provider }: { provider: ChatProvider }) {
  const [params] = useSearchParams();
  const location = useLocation();
  const navigate = useNavigate();
  // Read once: the code and the state then leave the address bar (and the history).
  const [query] = useState(() => ({
    state: params.get('state'),
    code: params.get('code'),
    error: params.get('error'),
  }));
  const name = PROVIDER_NAMES[provider];
  const finish = useMutation({
    mutationFn: (state: string) =>
      completeConnect(provider, {
        state,
        ...(query.code === null ? {} : { code: query.code }),
        ...(query.error === null ? {} : { error: query.error }),
      }),
    onSuccess: (done) => {
      // In the history entry's state, never in the address: a link anyone writes could fill that.
      const chatOutcome: ChatOutcome =
        done.outcome === 'connected'
          ? { connected: done.integration.provider, team: done.integration.teamName }
          : { error: done.message };
      void navigate(`/orgs/${done.orgId}/integrations`, { replace: true, state: { chatOutcome } });
    },
  });
  const started = useRef(false);
  useEffect(() => {
    if (started.current) return;
    started.current = true;
    void navigate(location.pathname, { replace: true });
    if (query.state) finish.mutate(query.state);
  }, [finish, location.pathname, navigate, query.state]);

  return (
    <section aria-labelledby="finish-heading">
      <h1 id="finish-heading">Connecting {name}</h1>
      {!query.state ? (
        <div role="alert" className="error">
          <p>
            Nothing to finish here: this page is where {name} sends you back after you allow the Drover app. Start from
            the Integrations page of your organization.
          </p>
        </div>
      ) : finish.isError ? (
        <ErrorMessage error={finish.error} />
      ) : (
        <p role="status">Finishing the connection to {name}…</p>
      )}
      {(!query.state || finish.isError) && (
        <p>
          <Link to="/">Back to the dashboard</Link>
        </p>
      )}
    </section>
  );
}
