import { ApiError, sessionEnded, UNREACHABLE, type ErrorDetail } from '../api/client';

/**
 * An API refusal in plain words: its message, then each detail the API named that the message
 * does not already say. A read refused because the session ended says nothing here: the banner
 * above the page says it (Shell.tsx).
 */
export function ErrorMessage({ error }: { error: unknown }) {
  if (!error || sessionEnded(error)) return null;
  const words = plainWords(error);
  const details = error instanceof ApiError ? newDetails(words, error.details) : [];
  return (
    <div role="alert" className="error">
      <p>{words}</p>
      {details.length > 0 && (
        <ul>
          {details.map((d) => (
            <li key={`${d.path}:${d.message}`}>
              {fieldName(d.path)} {d.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** The details that add something to `message`: the API's message often is its details joined. */
export const newDetails = (message: string, details: readonly ErrorDetail[]): ErrorDetail[] =>
  details.filter((d) => !message.includes(d.message));

export function plainWords(error: unknown): string {
  if (!(error instanceof ApiError)) return 'Something went wrong in the dashboard; reload the page.';
  if (error.code === UNREACHABLE) return error.message;
  if (error.statusCode === 403) return `Not allowed: ${error.message}`;
  if (error.statusCode >= 500) return `The coordinator failed (${error.statusCode}); try again, or read its log.`;
  return error.message;
}

/** `body.name` → `name` */
export const fieldName = (path: string): string => path.replace(/^(body|query|params)\./, '');
