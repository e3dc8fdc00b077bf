/**
 * A param's `pattern` (docs/agent.md, "Param patterns"): an operator's regular expression, tested
 * against a caller's value, so it must not let either of them stall the process that checks it.
 * Patterns are RE2 syntax, matched by re2js (a JavaScript port of RE2/J): no backtracking, so a
 * pattern such as `^(a|a)*$` answers in time linear in the value instead of exponential. What RE2
 * lacks (backreferences, lookaround, possessive quantifiers) is refused when the workflow is
 * reported, naming the feature. The coordinator, the agent and the dashboard use this one module.
 *
 * Linear is not yet small: matching costs up to the pattern's program size × the value's length
 * (25 to 170 ns each on the worst shapes measured: docs/decisions.md, "Param patterns run on
 * RE2"; the patterns people write run on re2js's DFA at a few ns per character), and
 * compiling costs with the program size too. So a pattern compiles to at most
 * MAX_PATTERN_INSTRUCTIONS instructions (re2js's parser, patched to that limit, refuses a larger
 * one before compiling it), an agent's workflow set carries at most MAX_SET_PATTERNS distinct
 * patterns of at most MAX_SET_PATTERN_INSTRUCTIONS instructions in all, and one run spends at most
 * MAX_RUN_PATTERN_WORK (instructions × characters) on its values (a PatternBudget).
 *
 * re2js is loaded on first use (`await loadPatternEngine()`), so that an agent whose workflows
 * have no pattern never loads it, and the dashboard fetches it only with a form that needs it.
 */

type Engine = typeof import('re2js');

/** The most instructions one pattern may compile to (the limit patches/re2js@2.10.0.patch sets). */
export const MAX_PATTERN_INSTRUCTIONS = 5000;
/** The most distinct patterns one agent's workflow set may carry. */
export const MAX_SET_PATTERNS = 256;
/** The most instructions the distinct patterns of one workflow set may compile to, in all. */
export const MAX_SET_PATTERN_INSTRUCTIONS = 25_000;
/** The most one run (or one value outside a run) may spend matching: instructions × characters. */
export const MAX_RUN_PATTERN_WORK = 1_000_000;

let engine: Engine | null = null;
let loading: Promise<void> | null = null;

/**
 * Loads re2js once; every later call answers at once. Compiling a pattern needs it done. A load
 * that failed (the dashboard's chunk not fetched) is tried again by the next call.
 */
export function loadPatternEngine(): Promise<void> {
  loading ??= import('re2js').then(
    (module) => {
      engine = module;
    },
    (error: unknown) => {
      loading = null;
      throw error;
    },
  );
  return loading;
}

export function patternEngineLoaded(): boolean {
  return engine !== null;
}

/** A compiled pattern: `test` is unanchored, as JSON Schema's `pattern` (anchor with `^...$`). */
export interface ParamPattern {
  readonly source: string;
  /** Its RE2 program size (instructions): what a check of one character costs, at most. */
  readonly instructions: number;
  test(value: string): boolean;
}

export type PatternCompilation = { ok: true; pattern: ParamPattern } | { ok: false; problem: string };

/** Compilations kept, so that a hot trigger does not recompile its patterns at each run. */
const compiled = new Map<string, PatternCompilation>();
const MAX_CACHED_PATTERNS = 1000;

/**
 * The pattern compiled, or why it cannot be: not RE2 syntax (the feature named when JavaScript has
 * it and RE2 does not), or too large. Throws when loadPatternEngine has not completed.
 */
export function compilePattern(source: string): PatternCompilation {
  const cached = compiled.get(source);
  if (cached) return cached;
  if (engine === null) throw new Error('the pattern engine is not loaded: await loadPatternEngine() first');
  const result = compileWith(engine, source);
  if (compiled.size >= MAX_CACHED_PATTERNS) compiled.clear();
  compiled.set(source, result);
  return result;
}

function compileWith(re2: Engine, source: string): PatternCompilation {
  let compiledPattern: InstanceType<Engine['RE2JS']>;
  try {
    compiledPattern = re2.RE2JS.compile(source);
  } catch (error) {
    if (!(error instanceof re2.RE2JSException)) throw error;
    return { ok: false, problem: syntaxProblem(error) };
  }
  const instructions = compiledPattern.programSize();
  if (instructions > MAX_PATTERN_INSTRUCTIONS) return { ok: false, problem: tooLarge(instructions) };
  return { ok: true, pattern: { source, instructions, test: (value) => compiledPattern.test(value) } };
}

const tooLarge = (instructions?: number) =>
  `is too large: it compiles to ${instructions === undefined ? 'more than' : `${instructions} instructions,`} ` +
  `more than the ${MAX_PATTERN_INSTRUCTIONS} a pattern may have (a counted repetition such as \`{1,500}\` ` +
  'costs one or two per repetition)';

/** JavaScript features RE2 does not have, by how the pattern spells them: what RE2's message would not say. */
const UNSUPPORTED: { test: RegExp; feature: string }[] = [
  { test: /^\(\?<[=!]/, feature: 'a lookbehind `(?<=...)`/`(?<!...)`' },
  { test: /^\(\?[=!]/, feature: 'a lookahead `(?=...)`/`(?!...)`' },
  { test: /^\\[1-9]/, feature: 'a backreference (`\\1`)' },
  { test: /^\\k/, feature: 'a named backreference (`\\k<name>`)' },
  { test: /^(?:[*+?]|\{[\d,]*\})\+/, feature: 'a possessive quantifier (`*+`, `++`, `?+`, `{n}+`)' },
  { test: /^\\u/, feature: 'the escape `\\u` (write `\\x{00e9}` instead)' },
  { test: /^\\c/, feature: 'a control escape `\\c` (write `\\x{01}` instead)' },
];

function syntaxProblem(error: Error): string {
  const details = error as { error?: string; input?: string | null };
  const what = details.error ?? error.message;
  const where = details.input ?? '';
  if (what === 'expression too large') return tooLarge();
  const unsupported = UNSUPPORTED.find((u) => u.test.test(where));
  if (unsupported) {
    return `uses ${unsupported.feature}, which patterns do not support (they are RE2 syntax, matched in linear time)`;
  }
  return `must be a regular expression in RE2 syntax (${what}${where ? ` at \`${where}\`` : ''})`;
}

/**
 * What one run may still spend on matching its values against their patterns (instructions ×
 * characters); a check that would go past it is refused instead of run.
 */
export class PatternBudget {
  #left = MAX_RUN_PATTERN_WORK;

  /** Takes what checking `value` against `pattern` costs; false (nothing taken) when too little is left. */
  take(pattern: ParamPattern, value: string): boolean {
    const cost = pattern.instructions * value.length;
    if (cost > this.#left) return false;
    this.#left -= cost;
    return true;
  }
}

/**
 * The patterns of one workflow set (an agent's report), compiled under the set's limits: a
 * pattern past MAX_SET_PATTERNS distinct ones, or once the set's patterns compile to more than
 * MAX_SET_PATTERN_INSTRUCTIONS instructions, is refused without being compiled. Each distinct
 * pattern counts once.
 */
export class PatternSet {
  readonly #seen = new Map<string, PatternCompilation>();
  #instructions = 0;

  compile(source: string): PatternCompilation {
    const known = this.#seen.get(source);
    if (known) return known;
    if (this.#seen.size >= MAX_SET_PATTERNS) {
      return {
        ok: false,
        problem: `is one pattern too many: the workflows of one agent carry at most ${MAX_SET_PATTERNS} distinct patterns`,
      };
    }
    if (this.#instructions > MAX_SET_PATTERN_INSTRUCTIONS) {
      return { ok: false, problem: this.#overSet(`the patterns before it already reach ${this.#instructions}`) };
    }
    let result = compilePattern(source);
    if (result.ok) {
      this.#instructions += result.pattern.instructions;
      if (this.#instructions > MAX_SET_PATTERN_INSTRUCTIONS) {
        result = { ok: false, problem: this.#overSet(`with this one they reach ${this.#instructions}`) };
      }
    }
    this.#seen.set(source, result);
    return result;
  }

  #overSet(reached: string): string {
    return (
      'is one pattern too many: the distinct patterns of the workflows of one agent compile to at most ' +
      `${MAX_SET_PATTERN_INSTRUCTIONS} instructions in all, and ${reached}`
    );
  }
}
