/**
 * Agent labels and label selectors (docs/fleets.md): one definition for the coordinator, the
 * agent, the CLI and the dashboard (`@drover/shared/labels`, no Node module). Selectors have the
 * syntax and the meaning of Kubernetes' label selectors.
 */

import { characterCount } from './characters.js';

/** Labels: key to value. */
export type Labels = Readonly<Record<string, string>>;

/** A key: lowercase letters, digits, `.`, `_`, `/` and `-`, starting and ending with a letter or digit, at most 63 characters. */
export const LABEL_KEY = /^[a-z0-9]([a-z0-9._/-]{0,61}[a-z0-9])?$/;
/** A value: letters, digits, `.`, `_` and `-`, at most 63 characters, possibly empty. */
export const LABEL_VALUE = /^[A-Za-z0-9._-]{0,63}$/;
/** At most this many labels from each source (the agent's, the operators'). */
export const MAX_LABELS = 32;
/** The labels every agent reports of itself: Node's `process.platform` and `process.arch`. */
export const BUILT_IN_LABELS = ['os', 'arch'] as const;

export interface LabelProblem {
  path: string;
  message: string;
}

const shown = (value: string): string => JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);

export const labelKeyProblem = (key: string): string | null =>
  LABEL_KEY.test(key)
    ? null
    : `${shown(key)} is not a label key: 1 to 63 lowercase letters, digits, '.', '_', '/' or '-', starting and ending with a letter or digit`;

export const labelValueProblem = (value: string): string | null =>
  LABEL_VALUE.test(value) ? null : `${shown(value)} is not a label value: up to 63 letters, digits, '.', '_' or '-'`;

/** What is wrong with `labels` (an object of string values) under `path`: each problem named by its key. */
export function labelProblems(labels: unknown, path: string): LabelProblem[] {
  if (typeof labels !== 'object' || labels === null || Array.isArray(labels)) {
    return [{ path, message: 'must be an object of label keys to string values' }];
  }
  const entries = Object.entries(labels);
  const problems: LabelProblem[] = [];
  if (entries.length > MAX_LABELS) {
    problems.push({ path, message: `at most ${MAX_LABELS} labels, got ${entries.length}` });
  }
  for (const [key, value] of entries) {
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) problems.push({ path: `${path}.${key}`, message: keyProblem });
    else if (typeof value !== 'string') problems.push({ path: `${path}.${key}`, message: 'must be a string' });
    else {
      const valueProblem = labelValueProblem(value);
      if (valueProblem) problems.push({ path: `${path}.${key}`, message: valueProblem });
    }
  }
  return problems;
}

/** `k=v` pairs (a flag's or `DROVER_AGENT_LABELS`' items) as labels; throws naming the bad item. */
export function parseLabelPairs(items: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const item of items) {
    const at = item.indexOf('=');
    if (at <= 0) throw new Error(`"${item}" is not a label: expected key=value`);
    const key = item.slice(0, at).trim();
    const value = item.slice(at + 1).trim();
    const problem = labelKeyProblem(key) ?? labelValueProblem(value);
    if (problem) throw new Error(problem);
    if (Object.hasOwn(labels, key) && labels[key] !== value) throw new Error(`the label ${key} is given twice`);
    labels[key] = value;
  }
  return labels;
}

/** The labels an agent carries: those it reports, with the operators' on top (an operator's wins a clash). */
export const mergeLabels = (reported: Labels, operator: Labels): Record<string, string> => ({
  ...reported,
  ...operator,
});

/** Labels as `k=v,k2=v2`, sorted by key. */
export const formatLabels = (labels: Labels): string =>
  Object.keys(labels)
    .sort()
    .map((key) => `${key}=${labels[key]}`)
    .join(',');

// ---------------------------------------------------------------------------------------------
// Selectors

export type SelectorOperator = 'exists' | 'notExists' | 'equals' | 'notEquals' | 'in' | 'notIn';

/** One requirement of a selector; a selector is the AND of its requirements. */
export interface Requirement {
  key: string;
  operator: SelectorOperator;
  /** The value (`equals`, `notEquals`: one) or the set (`in`, `notIn`); none for `exists`, `notExists`. */
  values: readonly string[];
}

/** The longest selector accepted, in characters. */
export const MAX_SELECTOR_LENGTH = 1024;

/** A selector that does not parse: where (0-based character offset) and why. */
export class SelectorError extends Error {
  constructor(
    readonly position: number,
    readonly reason: string,
  ) {
    super(`at position ${position}: ${reason}`);
    this.name = 'SelectorError';
  }
}

type TokenKind = 'identifier' | '!' | '=' | '==' | '!=' | '(' | ')' | ',' | 'end';
interface Token {
  kind: TokenKind;
  text: string;
  at: number;
}

const SYMBOLS = new Set(['!', '=', '(', ')', ',', '<', '>']);
const isSpace = (c: string): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r';

/** Kubernetes' lexer: symbols, whitespace, and identifiers (everything else up to either). */
function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (isSpace(c)) {
      i += 1;
      continue;
    }
    if (SYMBOLS.has(c)) {
      const two = source.slice(i, i + 2);
      if (two === '==' || two === '!=') {
        tokens.push({ kind: two, text: two, at: i });
        i += 2;
        continue;
      }
      if (c === '<' || c === '>') {
        throw new SelectorError(i, `'${c}' is not an operator here: use =, ==, !=, in, notin, a key, or !key`);
      }
      tokens.push({ kind: c as TokenKind, text: c, at: i });
      i += 1;
      continue;
    }
    let end = i;
    while (end < source.length && !isSpace(source[end]!) && !SYMBOLS.has(source[end]!)) end += 1;
    tokens.push({ kind: 'identifier', text: source.slice(i, end), at: i });
    i = end;
  }
  tokens.push({ kind: 'end', text: '', at: source.length });
  return tokens;
}

const describe = (t: Token): string => (t.kind === 'end' ? 'the end' : `'${t.text}'`);

/**
 * Parses a selector: requirements separated by commas, each `key`, `!key`, `key=value`,
 * `key==value`, `key!=value`, `key in (a,b)` or `key notin (a,b)`. The empty selector (only
 * whitespace) has no requirement and matches every agent. Throws SelectorError.
 */
export function parseSelector(source: string): Requirement[] {
  if (characterCount(source) > MAX_SELECTOR_LENGTH) {
    throw new SelectorError(MAX_SELECTOR_LENGTH, `a selector has at most ${MAX_SELECTOR_LENGTH} characters`);
  }
  const tokens = tokenize(source);
  let next = 0;
  const peek = (): Token => tokens[next]!;
  const take = (): Token => tokens[next++]!;
  const requirements: Requirement[] = [];

  const key = (token: Token): string => {
    if (token.kind !== 'identifier')
      throw new SelectorError(token.at, `expected a label key, found ${describe(token)}`);
    const problem = labelKeyProblem(token.text);
    if (problem) throw new SelectorError(token.at, problem);
    return token.text;
  };
  const value = (token: Token): string => {
    const problem = labelValueProblem(token.text);
    if (problem) throw new SelectorError(token.at, problem);
    return token.text;
  };
  /** `(a, b)`: empty items are the empty value, as in Kubernetes. */
  const set = (): string[] => {
    const open = take();
    if (open.kind !== '(') throw new SelectorError(open.at, `expected '(', found ${describe(open)}`);
    const values: string[] = [];
    for (;;) {
      const token = peek();
      if (token.kind === 'identifier') {
        values.push(value(take()));
      } else if (token.kind === ',' || token.kind === ')') {
        values.push('');
      } else {
        throw new SelectorError(token.at, `expected a value, ',' or ')', found ${describe(token)}`);
      }
      const after = take();
      if (after.kind === ')') return [...new Set(values)];
      if (after.kind !== ',') throw new SelectorError(after.at, `expected ',' or ')', found ${describe(after)}`);
    }
  };

  if (peek().kind === 'end') return requirements;
  for (;;) {
    const first = take();
    if (first.kind === '!') {
      requirements.push({ key: key(take()), operator: 'notExists', values: [] });
    } else {
      const k = key(first);
      const op = peek();
      if (op.kind === ',' || op.kind === 'end') {
        requirements.push({ key: k, operator: 'exists', values: [] });
      } else if (op.kind === '=' || op.kind === '==' || op.kind === '!=') {
        take();
        const v = peek();
        // `key=` (a comma or the end next) is the empty value, as in Kubernetes.
        const text = v.kind === ',' || v.kind === 'end' ? '' : v.kind === 'identifier' ? value(take()) : null;
        if (text === null) throw new SelectorError(v.at, `expected a value, found ${describe(v)}`);
        requirements.push({ key: k, operator: op.kind === '!=' ? 'notEquals' : 'equals', values: [text] });
      } else if (op.kind === 'identifier' && (op.text === 'in' || op.text === 'notin')) {
        take();
        requirements.push({ key: k, operator: op.text === 'in' ? 'in' : 'notIn', values: set() });
      } else {
        throw new SelectorError(
          op.at,
          `expected =, ==, !=, in, notin, ',' or the end after '${k}', found ${describe(op)}`,
        );
      }
    }
    const sep = take();
    if (sep.kind === 'end') return requirements;
    if (sep.kind !== ',') throw new SelectorError(sep.at, `expected ',' or the end, found ${describe(sep)}`);
  }
}

/** Whether `labels` meet every requirement. As in Kubernetes, `!=` and `notin` match labels without the key. */
export function matchesSelector(requirements: readonly Requirement[], labels: Labels): boolean {
  return requirements.every((r) => {
    const has = Object.hasOwn(labels, r.key);
    const value = has ? labels[r.key]! : undefined;
    switch (r.operator) {
      case 'exists':
        return has;
      case 'notExists':
        return !has;
      case 'equals':
        return value === r.values[0];
      case 'notEquals':
        return value !== r.values[0];
      case 'in':
        return value !== undefined && r.values.includes(value);
      case 'notIn':
        return value === undefined || !r.values.includes(value);
    }
  });
}

/** A selector written back in one canonical form: `a=x,b!=y,c in (p,q),d,!e`. */
/**
 * A selector as it is stored (a trigger's, an application's): its canonical form, which is parsed
 * again whenever it is read, so it must itself be a selector. Canonical forms may be longer than
 * what was written (`k in(a)` is `k in (a)`): one longer than a selector may be is refused here,
 * when it is written, rather than failing every later read. Throws SelectorError.
 */
export function storableSelector(requirements: readonly Requirement[]): string {
  const formatted = formatSelector(requirements);
  const length = characterCount(formatted);
  if (length > MAX_SELECTOR_LENGTH) {
    throw new SelectorError(
      MAX_SELECTOR_LENGTH,
      `as it is stored (\`key in (a,b)\`, one comma between requirements) the selector has ${length} characters, more than the ${MAX_SELECTOR_LENGTH} a selector may have`,
    );
  }
  return formatted;
}

export function formatSelector(requirements: readonly Requirement[]): string {
  return requirements
    .map((r) => {
      switch (r.operator) {
        case 'exists':
          return r.key;
        case 'notExists':
          return `!${r.key}`;
        case 'equals':
          return `${r.key}=${r.values[0]}`;
        case 'notEquals':
          return `${r.key}!=${r.values[0]}`;
        case 'in':
          return `${r.key} in (${r.values.join(',')})`;
        case 'notIn':
          return `${r.key} notin (${r.values.join(',')})`;
      }
    })
    .join(',');
}
