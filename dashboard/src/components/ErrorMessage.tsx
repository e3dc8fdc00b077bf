import { ApiError, UNREACHABLE } from '../api/client';

/** An API refusal in plain words: its message, then each detail the API named. */
export function ErrorMessage({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <div role="alert" className="error">
      <p>{plainWords(error)}</p>
      {error instanceof ApiError && error.details.length > 0 && (
        <ul>
          {error.details.map((d) => (
            <li key={`${d.path}:${d.message}`}>
              {fieldName(d.path)} {d.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function plainWords(error: unknown): string {
  if (!(error instanceof ApiError)) return 'Something went wrong in the dashboard; reload the page.';
  if (error.code === UNREACHABLE) return error.message;
  if (error.statusCode === 403) return `Not allowed: ${error.message}`;
  if (error.statusCode >= 500) return `The coordinator failed (${error.statusCode}); try again, or read its log.`;
  return error.message;
}

/** `body.name` → `name` */
export const fieldName = (path: string): string => path.replace(/^(body|query|params)\./, '');
