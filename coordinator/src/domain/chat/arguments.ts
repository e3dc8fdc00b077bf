import type { ParamDefinition } from '@drover/shared';

/**
 * A chat command's text (docs/chat.md, "Arguments"): the trigger's keyword, then `key=value`
 * pairs. A value with spaces is quoted (`msg="two words"`, straight or typographic quotes, the
 * way chat clients often rewrite them); `\"` and `\\` escape inside double quotes. `ref=<value>`
 * sets the run's ref instead of a parameter.
 */
export interface ChatCommand {
  /** The first word, lower-cased; '' when the text is empty. */
  keyword: string;
  /** Every `key=value` but `ref`, as written. */
  args: Record<string, string>;
  ref: string | undefined;
}

export type ParsedCommand = { ok: true; command: ChatCommand } | { ok: false; problem: string };

/** Opening quote → its closing one (typographic quotes as chat clients substitute them). */
const QUOTES = new Map([
  ['"', '"'],
  ["'", "'"],
  ['“', '”'],
  ['‘', '’'],
  ['„', '“'],
]);
const MAX_ARGS = 100;

export function parseChatCommand(text: string): ParsedCommand {
  const words = splitWords(text.trim());
  if (!words.ok) return words;
  const [keyword = '', ...rest] = words.words;
  if (keyword.includes('=')) {
    return { ok: false, problem: `start with the trigger's keyword, then key=value pairs (got \`${keyword}\`)` };
  }
  if (rest.length > MAX_ARGS) return { ok: false, problem: `at most ${MAX_ARGS} arguments` };
  // A Map, then fromEntries: `__proto__=x` must stay a plain key, never set a prototype.
  const args = new Map<string, string>();
  let ref: string | undefined;
  for (const word of rest) {
    const eq = word.indexOf('=');
    if (eq <= 0) return { ok: false, problem: `\`${word}\` is not key=value` };
    const key = word.slice(0, eq);
    const value = word.slice(eq + 1);
    if (key === 'ref') {
      if (ref !== undefined) return { ok: false, problem: '`ref` is given twice' };
      ref = value;
      continue;
    }
    if (args.has(key)) return { ok: false, problem: `\`${key}\` is given twice` };
    args.set(key, value);
  }
  return { ok: true, command: { keyword: keyword.toLowerCase(), args: Object.fromEntries(args), ref } };
}

/**
 * Why a trigger's keyword could never start a command, or null: the first word of a command is
 * read without its quotes and before any `=`, so a keyword holding either (`it's`, `a=b`,
 * `“go”`) would never be the word read. Checked when a trigger's keyword is set.
 */
export function chatKeywordProblem(keyword: string): string | null {
  const parsed = parseChatCommand(keyword);
  const readBack =
    parsed.ok &&
    parsed.command.keyword === keyword.trim().toLowerCase() &&
    parsed.command.ref === undefined &&
    Object.keys(parsed.command.args).length === 0;
  return readBack
    ? null
    : `must not contain \`=\` or an opening quote (" ' “ ‘ „): a command's first word is read without them, so no command could run it`;
}

/** Words separated by white space, quotes grouping (and removed), `key="a b"` one word. */
function splitWords(text: string): { ok: true; words: string[] } | { ok: false; problem: string } {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    const closing = QUOTES.get(c);
    if (closing !== undefined) {
      const end = findClosing(text, i + 1, closing, c === '"');
      if (end === null) return { ok: false, problem: `a quote (${c}) is not closed` };
      word += end.value;
      inWord = true;
      i = end.index;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return { ok: true, words };
}

function findClosing(
  text: string,
  from: number,
  closing: string,
  escapes: boolean,
): { value: string; index: number } | null {
  let value = '';
  for (let i = from; i < text.length; i++) {
    const c = text[i]!;
    if (escapes && c === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\')) {
      value += text[++i];
    } else if (c === closing || (closing === '"' && c === '”')) {
      return { value, index: i };
    } else {
      value += c;
    }
  }
  return null;
}

/**
 * The arguments as run params, typed by the workflow's `paramsSchema`: `number` parameters from
 * their decimal text, `boolean` from true/false/yes/no/on/off/1/0; the rest stay strings and are
 * checked by the run like any params (enum options, pattern, min/max). A `file` parameter takes a
 * stored file's id. Undeclared arguments pass as strings (the run refuses them when the workflow
 * declares its params: trigger-run/params.ts). Problems name each argument.
 */
export function argumentsToParams(
  args: Record<string, string>,
  schema: readonly ParamDefinition[] | null,
): { ok: true; params: Record<string, unknown> } | { ok: false; problems: string[] } {
  const params = new Map<string, unknown>();
  const problems: string[] = [];
  const declared = new Map((schema ?? []).map((p) => [p.name, p]));
  for (const [key, text] of Object.entries(args)) {
    const param = declared.get(key);
    switch (param?.type) {
      case 'number': {
        const n = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text) ? Number(text) : Number.NaN;
        if (Number.isFinite(n)) params.set(key, n);
        else problems.push(`\`${key}\` must be a number, got \`${text}\``);
        break;
      }
      case 'boolean': {
        const b = BOOLEANS.get(text.toLowerCase());
        if (b !== undefined) params.set(key, b);
        else problems.push(`\`${key}\` must be true or false, got \`${text}\``);
        break;
      }
      case 'file':
        params.set(key, { __type: 'FileRef', id: text });
        break;
      default:
        params.set(key, text);
    }
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, params: Object.fromEntries(params) };
}

const BOOLEANS = new Map<string, boolean>([
  ['true', true],
  ['false', false],
  ['yes', true],
  ['no', false],
  ['on', true],
  ['off', false],
  ['1', true],
  ['0', false],
]);
