import { isUtf8 } from 'node:buffer';
import fs from 'node:fs/promises';
import path from 'node:path';
import { PatternSet, PutWorkflowsRequest, type WorkflowDefinition } from '@drover/shared';
import { parseWorkflowFile } from './parse-workflow.js';
import type { FileProblem } from './yaml-reader.js';

/** A workflow file larger than this is refused unread (1 MiB). */
export const MAX_WORKFLOW_FILE_BYTES = 1024 * 1024;
const MAX_WORKFLOWS = PutWorkflowsRequest.properties.workflows.maxItems;

export type WorkflowProblem = FileProblem;

export interface LoadedWorkflow {
  /** The file's name inside the workflows directory (`deploy.yaml`). */
  file: string;
  /** Ready for `PUT /v1/agent/workflows` (timeouts in ms, `secretsKeys` from `secrets`). */
  definition: WorkflowDefinition;
}

export interface LoadedWorkflows {
  /** The valid workflows, by file name. */
  workflows: LoadedWorkflow[];
  /** Problems of invalid files (skipped), `file` being the name inside the directory. */
  problems: WorkflowProblem[];
  /** True when the directory does not exist (yet): no workflows, and no problem either. */
  missingDirectory?: boolean;
  /** True when this user may not read the directory (EACCES, EPERM): its problem says so too. */
  deniedDirectory?: boolean;
}

const octal = (mode: number): string => (mode & 0o7777).toString(8).padStart(4, '0');

/** Where workflow files live unless `--workflows-dir` says otherwise: `<state-dir>/workflows`. */
export const defaultWorkflowsDir = (stateDir: string): string => path.join(stateDir, 'workflows');

/** Whether a directory entry is a workflow file: `*.yaml` or `*.yml`, not hidden (editor files). */
export const isWorkflowFileName = (name: string): boolean => /\.ya?ml$/i.test(name) && !name.startsWith('.');

/**
 * Reads every workflow file of `dir` (one workflow per file, docs/agent-protocol.md). Never throws for the
 * content of the directory: an invalid, unreadable or oversized file is reported in `problems`
 * and skipped, and two files defining the same workflow name are both skipped, each problem
 * naming the other file. A file the agent may not trust (any user may change it; it belongs to
 * neither root nor the agent's user) is skipped unread, so that its name cannot clash with a
 * trusted file's. Other files (not `.yaml`/`.yml`, hidden, directories) are ignored.
 */
export interface LoadOptions {
  /**
   * The agent's own user (`process.getuid()`); `drover-agent workflows` run as root passes the
   * owner of the state directory instead (inspectingAgentUid); null where there are no uids.
   */
  agentUid?: number | null;
}

/**
 * The user whose files the agent trusts besides root's, for `drover-agent workflows`: this one,
 * except for root (`sudo drover-agent workflows`), who inspects on behalf of the agent: then the
 * owner of the state directory (else of the workflows directory), the user the service runs as.
 * Judged against root, the service's own files would all be reported as untrusted.
 */
export async function inspectingAgentUid(stateDir: string, workflowsDir: string): Promise<number | null> {
  const me = process.getuid?.() ?? null;
  if (me !== 0) return me;
  for (const dir of [stateDir, workflowsDir]) {
    const stat = await fs.stat(dir).catch(() => null);
    if (stat) return stat.uid;
  }
  return me;
}

export async function loadWorkflows(dir: string, options: LoadOptions = {}): Promise<LoadedWorkflows> {
  const agentUid = options.agentUid === undefined ? (process.getuid?.() ?? null) : options.agentUid;
  let entries: Buffer[];
  try {
    // As bytes: a name that is not UTF-8, decoded, would name no file and be passed over unseen.
    entries = await fs.readdir(dir, { encoding: 'buffer' });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { workflows: [], problems: [], missingDirectory: true };
    const reason = code === 'ENOTDIR' ? 'it is not a directory' : `cannot read it (${code ?? String(error)})`;
    return {
      workflows: [],
      problems: [{ file: dir, message: `the workflows directory ${dir}: ${reason}` }],
      ...(code === 'EACCES' || code === 'EPERM' ? { deniedDirectory: true } : {}),
    };
  }
  // A directory any user may write to (without the sticky bit) lets any of them replace what the
  // agent runs, as the agent's user: nothing in it is run.
  const dirMode = (await fs.stat(dir).catch(() => null))?.mode ?? 0;
  if (dirMode & 0o002 && !(dirMode & 0o1000)) {
    const message = `the workflows directory ${dir}: any user of this machine may add or replace files in it (mode ${octal(dirMode)}), and the agent runs what they say: none is read until \`chmod o-w ${dir}\``;
    return { workflows: [], problems: [{ file: dir, message }] };
  }

  const problems: WorkflowProblem[] = [];
  const names: string[] = [];
  for (const entry of entries) {
    const name = isUtf8(entry) ? entry.toString('utf8') : null;
    if (name !== null) {
      if (isWorkflowFileName(name)) names.push(name);
      continue;
    }
    const shown = showNameBytes(entry);
    if (isWorkflowFileName(shown)) problems.push({ file: shown, message: NOT_UTF8_NAME });
  }
  names.sort();
  const parsed: { file: string; definition: WorkflowDefinition; nameLine?: number }[] = [];
  // The coordinator's limits on patterns span the whole set: files past them are refused here.
  const patterns = new PatternSet();
  for (const file of names) {
    const result = await readWorkflowFile(dir, file, patterns, agentUid);
    if ('problems' in result) problems.push(...result.problems);
    else parsed.push(result);
  }

  const byName = new Map<string, typeof parsed>();
  for (const entry of parsed) {
    const same = byName.get(entry.definition.name) ?? [];
    same.push(entry);
    byName.set(entry.definition.name, same);
  }
  const workflows: LoadedWorkflow[] = [];
  for (const entry of parsed) {
    const same = byName.get(entry.definition.name)!;
    if (same.length === 1) {
      workflows.push({ file: entry.file, definition: entry.definition });
      continue;
    }
    const others = same.filter((o) => o !== entry).map((o) => o.file);
    problems.push({
      file: entry.file,
      ...(entry.nameLine ? { line: entry.nameLine } : {}),
      message:
        `name: the workflow \`${entry.definition.name}\` is also defined in ${others.join(', ')}; ` +
        'both files are skipped until the names differ',
    });
  }
  for (const extra of workflows.splice(MAX_WORKFLOWS)) {
    problems.push({
      file: extra.file,
      message: `skipped: an agent reports at most ${MAX_WORKFLOWS} workflows, and this one is past the limit`,
    });
  }
  problems.sort((a, b) => (a.file === b.file ? (a.line ?? 0) - (b.line ?? 0) : a.file < b.file ? -1 : 1));
  return { workflows, problems };
}

async function readWorkflowFile(
  dir: string,
  file: string,
  patterns: PatternSet,
  agentUid: number | null,
): Promise<{ file: string; definition: WorkflowDefinition; nameLine?: number } | { problems: WorkflowProblem[] }> {
  const full = path.join(dir, file);
  let text: string;
  try {
    const stat = await fs.stat(full);
    if (!stat.isFile()) return { problems: [] }; // a directory named like a file: not ours to judge
    // Skipped before it is parsed: its name can neither define a workflow nor clash with a trusted one.
    const untrusted = await untrustedOwner(full, stat.uid, agentUid);
    if (untrusted) return { problems: [{ file, message: untrusted }] };
    if (stat.mode & 0o002) {
      const message = `any user of this machine may change the file (mode ${octal(stat.mode)}), and the agent runs what it says: skipped until \`chmod o-w\``;
      return { problems: [{ file, message }] };
    }
    if (stat.size > MAX_WORKFLOW_FILE_BYTES) {
      return {
        problems: [{ file, message: `the file is too large (${stat.size} bytes; a workflow file is at most 1 MiB)` }],
      };
    }
    const bytes = await fs.readFile(full);
    const decoded = decodeUtf8(bytes);
    if (decoded.text === null) {
      return {
        problems: [
          { file, line: decoded.line, message: 'the file is not UTF-8 text (save it as UTF-8; Latin-1 is not read)' },
        ],
      };
    }
    text = decoded.text;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      // A dangling symbolic link is worth a word; a file removed while we read the directory is not.
      const link = await fs.lstat(full).catch(() => null);
      return link?.isSymbolicLink()
        ? { problems: [{ file, message: 'the file is a link to nothing' }] }
        : { problems: [] };
    }
    const reason = code === 'EACCES' || code === 'EPERM' ? 'permission denied' : (code ?? String(error));
    return { problems: [{ file, message: `cannot read the file: ${reason}` }] };
  }
  if (text.length > MAX_WORKFLOW_FILE_BYTES) {
    return { problems: [{ file, message: 'the file is too large (a workflow file is at most 1 MiB)' }] };
  }
  const result = await parseWorkflowFile(file, text, patterns);
  if (!result.definition) return { problems: result.problems };
  return { file, definition: result.definition, ...(result.nameLine ? { nameLine: result.nameLine } : {}) };
}

/**
 * Why a workflow file's owner is not trusted, or null: the agent runs what a file says (as
 * drover-agent under the Debian package's service, as root under a unit of your own), so the file, and the link that names it if it is one, must belong to
 * root or to the agent's own user. Another user's file (one written into a directory others may
 * write to, `/tmp`-like with the sticky bit, or a group's) is skipped.
 */
async function untrustedOwner(full: string, uid: number, agentUid: number | null): Promise<string | null> {
  if (agentUid === null) return null;
  const trusted = (owner: number) => owner === 0 || owner === agentUid;
  const link = trusted(uid) ? await fs.lstat(full).catch(() => null) : null;
  const owner = !trusted(uid) ? uid : link && !trusted(link.uid) ? link.uid : null;
  if (owner === null) return null;
  const what = owner === uid ? 'the file' : 'the link to the file';
  const allowed = agentUid === 0 ? 'root' : `root or to ${await userName(agentUid)}, the agent's user`;
  // The advice names the agent's user, never root for an agent that is not root: a file of root's
  // is trusted, but one made root's with 0600 could no longer be read by the agent.
  const chown = agentUid === 0 ? 'root' : ((await userName(agentUid, { bare: true })) ?? String(agentUid));
  return (
    `${what} belongs to ${await userName(owner)}, not to ${allowed}, and the agent runs what it says: ` +
    `skipped until it belongs to ${agentUid === 0 ? 'root' : 'one of them'} (\`chown ${chown}\`)`
  );
}

/**
 * `nobody (uid 65534)`, or `uid 1234` for a user /etc/passwd does not name; with `bare`, the name
 * alone or null.
 */
async function userName(uid: number): Promise<string>;
async function userName(uid: number, options: { bare: true }): Promise<string | null>;
async function userName(uid: number, options: { bare?: boolean } = {}): Promise<string | null> {
  const passwd = await fs.readFile('/etc/passwd', 'utf8').catch(() => '');
  const name = passwd
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[2] === String(uid))?.[0];
  if (options.bare) return name ?? null;
  return name ? `${name} (uid ${uid})` : `uid ${uid}`;
}

/** The text of UTF-8 bytes, or null with the line of the first byte that is not UTF-8. */
function decodeUtf8(bytes: Buffer): { text: string; line?: never } | { text: null; line: number } {
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) };
  } catch {
    // Decoded leniently, the first bad byte is the first replacement character.
    const lenient = bytes.toString('utf8');
    return { text: null, line: lenient.slice(0, lenient.indexOf('\ufffd')).split('\n').length };
  }
}

const NOT_UTF8_NAME =
  "the file's name is not UTF-8 text (its other bytes are shown as \\xHH; Latin-1, perhaps): " +
  'skipped until it is renamed (`mv`) to a UTF-8 name';

/**
 * A file name that is not UTF-8, as it can be shown: its UTF-8 characters as they are, every other
 * byte as `\xHH` (`caf\xe9.yaml`), the way control characters are shown (showControls).
 */
function showNameBytes(name: Buffer): string {
  let shown = '';
  let at = 0;
  while (at < name.length) {
    // UTF-8 has no character that begins another: the shortest valid run from here is one character.
    const length = [1, 2, 3, 4].find((n) => at + n <= name.length && isUtf8(name.subarray(at, at + n)));
    if (length === undefined) {
      shown += `\\x${name[at]!.toString(16).padStart(2, '0')}`;
      at += 1;
    } else {
      shown += name.toString('utf8', at, at + length);
      at += length;
    }
  }
  return shown;
}
