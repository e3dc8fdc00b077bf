import { AgentError } from '../errors.js';

/**
 * The coordinator's public URL as the agent stores it: `http(s)://host[:port]`. Accepts the base
 * URL with or without its `/v1` suffix (`https://drover.example.com/v1/`), and refuses any other
 * path, because signed requests cover the path as sent and the coordinator serves `/v1/` at its root.
 */
export function parseCoordinatorUrl(input: string): string {
  let url: URL;
  try {
    url = new URL(input.trim());
  } catch {
    throw new AgentError('bad_url', `\`${input}\` is not a URL; expected something like https://drover.example.com`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new AgentError('bad_url', `The coordinator URL must start with http:// or https://, got \`${input}\``);
  }
  if (url.username || url.password) throw new AgentError('bad_url', 'The coordinator URL must not contain credentials');
  if (url.search || url.hash)
    throw new AgentError('bad_url', `The coordinator URL must not have a query or fragment, got \`${input}\``);
  if (!/^\/(v1\/?)?$/.test(url.pathname)) {
    throw new AgentError(
      'bad_url',
      `The coordinator URL must be the server root or its /v1 base URL, got the path \`${url.pathname}\``,
    );
  }
  return url.origin;
}
