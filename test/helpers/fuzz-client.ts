import http from 'node:http';
import { signRequest } from '@drover/shared';
import { SEND_TIME, type FuzzCase } from './fuzz-cases.js';
import type { FuzzCredentials } from './fuzz-fixture.js';

/**
 * Sends fuzz cases over real HTTP with node:http, whose request target goes out exactly as given
 * (fetch would resolve `..` and re-encode), and judges each answer against the error contract.
 */

export interface FuzzAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

export interface FuzzOutcome {
  fuzzCase: FuzzCase;
  answer: FuzzAnswer | null;
  problems: string[];
}

/** Answers are read up to this much; the rest is dropped (a long download). */
const MAX_READ_BYTES = 4 * 1024 * 1024;
const OTHER_BODY = Buffer.from('{"signed":"another body"}');

function credentialHeaders(c: FuzzCase, credentials: FuzzCredentials): Record<string, string> {
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  switch (c.credential) {
    case 'session':
      return bearer(credentials.session);
    case 'memberSession':
      return bearer(credentials.memberSession);
    case 'apiToken':
      return bearer(credentials.apiToken);
    case 'agent':
    case 'agentOtherBody': {
      // Only /v1/ paths can be signed; elsewhere the headers are signed for the /v1/ form.
      const path = c.target.startsWith('/v1/') ? c.target : `/v1${c.target}`;
      return signRequest({
        agentId: credentials.agent.agentId,
        privateKey: credentials.agent.privateKey,
        method: c.method,
        path,
        body: c.credential === 'agent' ? c.body : OTHER_BODY,
      });
    }
    default:
      return {};
  }
}

/** One request; resolves with the answer, or with null and why there was none. */
export function sendCase(
  origin: URL,
  agent: http.Agent,
  c: FuzzCase,
  credentials: FuzzCredentials,
  timeoutMs: number,
): Promise<{ answer: FuzzAnswer | null; error?: string }> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (value: { answer: FuzzAnswer | null; error?: string }) => {
      if (settled) return;
      settled = true;
      resolve(value);
    };
    let req: http.ClientRequest;
    try {
      req = http.request({
        host: origin.hostname,
        port: origin.port,
        method: c.method,
        path: c.target,
        headers: {
          ...Object.fromEntries(
            Object.entries(c.headers).map(([k, v]) => [k, v === SEND_TIME ? String(Date.now()) : v]),
          ),
          ...credentialHeaders(c, credentials),
          // Node's client sends a HEAD or GET body without saying how long it is.
          ...(c.body === undefined ? {} : { 'content-length': String(c.body.length) }),
        },
        agent,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      settle({ answer: null, error: `the request could not be sent: ${(error as Error).message}` });
      return;
    }
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = () =>
        settle({
          answer: { status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') },
        });
      // An open event stream is an answer (its first bytes are enough); so is a long download.
      if ((res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
        finish();
        res.destroy();
        return;
      }
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= MAX_READ_BYTES) {
          finish();
          res.destroy();
        }
      });
      res.on('end', finish);
      res.on('error', (error) => settle({ answer: null, error: `the answer broke off: ${error.message}` }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      const timedOut = error.name === 'AbortError' || error.name === 'TimeoutError';
      settle({
        answer: null,
        error: timedOut
          ? `no answer within ${timeoutMs} ms`
          : `connection error (${error.code ?? error.name}): ${error.message}`,
      });
    });
    req.end(c.body);
  });
}

/** What gives a server's internals away: stack frames, SQLite errors, source paths. */
const LEAKS = [
  /\bat [\w.<>]+ \(/,
  /\bat (file|node):/,
  /SqliteError|SQLITE_[A-Z]/,
  /node_modules|\/src\/[\w/-]+\.[jt]s/,
];

const sentText = (c: FuzzCase) =>
  `${decodeLoosely(c.target)} ${JSON.stringify(c.headers)} ${c.body?.toString('utf8') ?? ''}`;

function decodeLoosely(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The contract every answer keeps, as a list of broken rules (empty: all kept). */
export function judge(c: FuzzCase, answer: FuzzAnswer): string[] {
  const problems: string[] = [];
  const { status, headers, text } = answer;
  if (status >= 500) problems.push(`answered ${status}`);
  if (!headers['x-request-id']) problems.push('no x-request-id header');
  for (const leak of LEAKS) {
    const found = leak.exec(text)?.[0];
    // What the request itself carried may come back in a message (an unknown field's name).
    if (found !== undefined && !sentText(c).includes(found)) problems.push(`the body gives internals away: ${found}`);
  }
  if (status < 400 || c.method === 'HEAD') return problems;

  if (!(headers['content-type'] ?? '').startsWith('application/json')) {
    problems.push(`error answer with content-type ${headers['content-type'] ?? '(none)'}`);
  }
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    return [...problems, 'error body is not JSON'];
  }
  if (status === 401 && !headers['www-authenticate']) problems.push('401 without WWW-Authenticate');
  if (status === 405 && !headers.allow) problems.push('405 without Allow');
  const tokenReadLimit = status === 429 && body?.scope === 'token_read';
  if (tokenReadLimit) {
    if (body.error !== 'Too Many Requests' || typeof body.limit !== 'number' || typeof body.observed !== 'number') {
      problems.push('token read 429 without its documented fields');
    }
    return problems;
  }
  if (body?.statusCode !== status) problems.push(`body.statusCode ${String(body?.statusCode)} is not the status`);
  if (typeof body?.code !== 'string' || body.code === '') problems.push('body.code is not a string');
  if (typeof body?.message !== 'string') problems.push('body.message is not a string');
  if (body?.details !== undefined && (body.details === null || typeof body.details !== 'object')) {
    problems.push('body.details is neither an array nor an object');
  }
  if (status === 422 && !Array.isArray(body?.details)) problems.push('422 without a details array');
  return problems;
}

/** Node's limit of a request's line and headers (its `maxHeaderSize`, which the coordinator keeps). */
const MAX_HEAD_BYTES = 16 * 1024;

/**
 * A HEAD whose request line and headers pass Node's limit, refused with a body its client takes as
 * garbage: the coordinator answers a HEAD without one when it can tell the method from the bytes
 * its parser failed on, which it cannot when the request line came in an earlier piece (a busy
 * machine splits a long request line; coordinator/src/http/framework-errors.ts, `isHeadRequest`).
 * Known and kept: telling it otherwise would read every connection's bytes twice.
 */
function headRefusedInPieces(c: FuzzCase, error: string): boolean {
  const headBytes = c.target.length + JSON.stringify(c.headers).length;
  return c.method === 'HEAD' && headBytes > MAX_HEAD_BYTES && error.includes('Data after `Connection: close`');
}

/** Runs `cases` with at most `concurrency` in flight; outcomes in the cases' order. */
export async function runCases(
  origin: URL,
  cases: readonly FuzzCase[],
  credentials: FuzzCredentials,
  options: { concurrency: number; timeoutMs: number },
): Promise<FuzzOutcome[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.concurrency });
  const outcomes: FuzzOutcome[] = new Array(cases.length);
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const i = next++;
      const c = cases[i]!;
      const { answer, error } = await sendCase(origin, agent, c, credentials, options.timeoutMs);
      outcomes[i] = {
        fuzzCase: c,
        answer,
        problems: answer ? judge(c, answer) : headRefusedInPieces(c, error!) ? [] : [error!],
      };
    }
  };
  try {
    await Promise.all(Array.from({ length: options.concurrency }, worker));
  } finally {
    agent.destroy();
  }
  return outcomes;
}

const clip = (text: string, max: number) =>
  text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;

/** One line per failed case: what was sent, what came back, and which rules broke. */
export function describeOutcome(o: FuzzOutcome): string {
  const c = o.fuzzCase;
  const body = c.body === undefined ? '(no body)' : JSON.stringify(clip(c.body.toString('utf8'), 160));
  const answer = o.answer ? `${o.answer.status} ${clip(o.answer.text, 240)}` : '(no answer)';
  return (
    `case ${c.name} [${c.route.method} ${c.route.path}] ${c.method} ${clip(c.target, 160)} ` +
    `credential=${c.credential} headers=${clip(JSON.stringify(c.headers), 300)} body=${body}\n    -> ${answer}\n    ` +
    `problems: ${o.problems.join('; ')}`
  );
}
