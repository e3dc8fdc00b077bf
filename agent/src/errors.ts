/** Why an agent operation failed; callers branch on `code`, never on the message. */
export type AgentErrorCode =
  | 'bad_url'
  | 'bad_token'
  | 'unreachable'
  | 'enrollment_refused'
  | 'signature_refused'
  | 'http_error'
  | 'bad_response'
  | 'already_enrolled'
  | 'not_enrolled'
  | 'bad_state'
  | 'already_running'
  | 'bad_config';

export class AgentError extends Error {
  readonly code: AgentErrorCode;

  constructor(code: AgentErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AgentError';
    this.code = code;
  }
}

export const isAgentError = (error: unknown): error is AgentError => error instanceof AgentError;
