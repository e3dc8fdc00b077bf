import {
  isAlias,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  visit,
  type Alias,
  type Document,
  type Node as YamlNode,
  type Scalar,
  type YAMLMap,
  type YAMLSeq,
} from 'yaml';
import { nearestName } from '@drover/shared';

/** A problem of a local file: which file, where in it (1-based) and what is wrong. */
export interface FileProblem {
  file: string;
  line?: number;
  column?: number;
  message: string;
}

/** A path inside a YAML document, as people read it: `steps[1].timeout`, `env.PORT`. */
export type YamlPath = readonly (string | number)[];

export function formatPath(path: YamlPath): string {
  let out = '';
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : out ? `.${part}` : part;
  return out;
}

/**
 * Reads a YAML document node by node, keeping positions, so that every problem names the line
 * and the path of what is wrong (`deploy.yaml:7: steps[1].timeout: expected ...`). Values are
 * taken from the nodes, never from a plain `toJS()`, so that nothing unchecked gets through.
 */
export class YamlReader {
  readonly problems: FileProblem[] = [];
  readonly doc: Document.Parsed;
  readonly #lines = new LineCounter();
  readonly #concealValues: boolean;
  /** The node each alias stands for, found in one walk of the document when first needed. */
  #aliasTargets: Map<Alias, YamlNode> | null = null;
  /** How much of the file's text the aliases read so far repeat (see `resolve`). */
  #aliasedChars = 0;
  /** Set once the aliases repeat more than MAX_ALIASED_CHARS: nothing more is read through one. */
  #aliasesOverLimit = false;

  constructor(
    readonly file: string,
    readonly source: string,
    options: ReaderOptions = {},
  ) {
    this.#concealValues = options.concealValues === true;
    this.doc = parseDocument(source, { lineCounter: this.#lines, prettyErrors: false, uniqueKeys: true });
    for (const error of this.doc.errors) {
      const { line, col } = this.#lines.linePos(error.pos[0]);
      // The library's advice (`please use YAML.parseAllDocuments()`) is for programmers.
      const duplicate = error.code === 'DUPLICATE_KEY' ? keyAt(this.doc, error.pos[0]) : null;
      const message =
        error.code === 'MULTIPLE_DOCS'
          ? `a second YAML document starts here (after a \`---\` or \`...\` line): ${options.oneDocument ?? ONE_DOCUMENT}`
          : duplicate !== null
            ? `invalid YAML: the key \`${duplicate}\` stands twice in one map: keep one`
            : `invalid YAML: ${syntaxMessage(error.message)}`;
      this.problems.push({ file, line, column: col, message });
    }
    // A tag the parser does not know is dropped with only a warning, and its value read without
    // it: `PASSWORD: !Sup3r` was the empty string, `PASSWORD: !pass word` the text `word`.
    for (const warning of this.doc.warnings) {
      if (warning.code !== 'TAG_RESOLVE_FAILED') continue;
      const { line, col } = this.#lines.linePos(warning.pos[0]);
      const what = this.#concealValues ? 'a value' : `\`${clip(this.source.slice(warning.pos[0], warning.pos[1]))}\``;
      this.problems.push({
        file,
        line,
        column: col,
        message:
          `invalid YAML: ${what} starts with \`!\`, which YAML reads as a tag, not as text: ` +
          `quote the value ('!...')`,
      });
    }
  }

  /** False when the text is not valid YAML (its problems are already recorded). */
  get parsed(): boolean {
    return this.doc.errors.length === 0;
  }

  get root(): YamlNode | null {
    return (this.doc.contents as YamlNode | null) ?? null;
  }

  /** Records a problem about `node` (or the document's start) at `path`. */
  problem(node: YamlNode | null | undefined, path: YamlPath, message: string): void {
    if (this.#aliasesOverLimit) return; // an echo of the alias that passed the limit
    const where = formatPath(path);
    const offset = node?.range?.[0];
    const pos = offset === undefined ? undefined : this.#lines.linePos(offset);
    this.problems.push({
      file: this.file,
      ...(pos ? { line: pos.line, column: pos.col } : {}),
      message: where ? `${where}: ${message}` : message,
    });
  }

  /** The 1-based line where `node` starts. */
  line(node: YamlNode | null | undefined): number | undefined {
    const offset = node?.range?.[0];
    return offset === undefined ? undefined : this.#lines.linePos(offset).line;
  }

  /**
   * The node an alias points to, or the node itself. Each alias read counts the text of what it
   * stands for: a few lines of anchors and aliases (a step of 256 aliased args, aliased 256 times)
   * would otherwise make a definition of hundreds of megabytes from a file of kilobytes, too large
   * to report (its JSON cannot even be made). Past MAX_ALIASED_CHARS, nothing is read through an
   * alias, and the problem names the alias that passed the limit.
   */
  resolve(node: unknown): YamlNode | null {
    if (node === null || node === undefined) return null;
    if (!isAlias(node)) return node as YamlNode;
    if (this.#aliasesOverLimit) return null;
    const target = this.#targets().get(node) ?? null;
    const range = target?.range;
    if (range) this.#aliasedChars += range[1] - range[0];
    if (this.#aliasedChars > MAX_ALIASED_CHARS) {
      this.#aliasesOverLimit = true;
      const offset = node.range?.[0];
      const pos = offset === undefined ? undefined : this.#lines.linePos(offset);
      this.problems.push({
        file: this.file,
        ...(pos ? { line: pos.line, column: pos.col } : {}),
        message:
          `the aliases of a file may repeat at most ${MAX_ALIASED_CHARS} characters of its text in all, ` +
          `and the alias \`*${node.source}\` passes that: alias less (the file is skipped)`,
      });
      return null;
    }
    return target;
  }

  /**
   * Where every alias points, in one walk of the document: the last node before the alias with
   * its anchor, as YAML says. The library's own `Alias.resolve` walks the whole document for each
   * alias, so a file of 25,000 `*a` took a minute to read, the daemon waiting meanwhile.
   */
  #targets(): Map<Alias, YamlNode> {
    if (this.#aliasTargets) return this.#aliasTargets;
    const targets = new Map<Alias, YamlNode>();
    const anchored = new Map<string, YamlNode>();
    visit(this.doc, {
      Node: (_key, node) => {
        if (isAlias(node)) {
          const target = anchored.get(node.source);
          if (target) targets.set(node, target);
        } else if (node.anchor) anchored.set(node.anchor, node);
      },
    });
    this.#aliasTargets = targets;
    return targets;
  }

  /**
   * The entries of a map, by key. Refuses a node that is not a map, keys that are not strings,
   * and (when `allowed` is given) keys not in it, naming the nearest allowed key.
   */
  map(node: YamlNode | null, path: YamlPath, allowed?: readonly string[]): Map<string, MapEntry> | null {
    const resolved = this.resolve(node);
    if (!isMap(resolved)) {
      this.problem(node, path, `expected a map (key: value lines), got ${this.kind(resolved)}`);
      return null;
    }
    const entries = new Map<string, MapEntry>();
    for (const pair of (resolved as YAMLMap<unknown, unknown>).items) {
      const keyNode = this.resolve(pair.key);
      const valueNode = this.resolve(pair.value);
      if (!isScalar(keyNode) || (typeof keyNode.value !== 'string' && typeof keyNode.value !== 'number')) {
        this.problem(keyNode ?? resolved, path, `keys must be names, got ${this.kind(keyNode)}`);
        continue;
      }
      const key = String(keyNode.value);
      if (key === MERGE_KEY && keyNode.type === 'PLAIN') {
        this.problem(keyNode, [...path, key], MERGE_KEY_HINT);
        continue;
      }
      if (allowed && !allowed.includes(key)) {
        const near = nearestName(key, allowed);
        this.problem(
          keyNode,
          [...path, key],
          `unknown key${near ? ` (did you mean \`${near}\`?)` : ''}; expected one of ${allowed.join(', ')}`,
        );
        continue;
      }
      entries.set(key, { keyNode, node: valueNode });
    }
    return entries;
  }

  /** The items of a list (`maxItems` enforced), or null after recording a problem. */
  list(node: YamlNode | null, path: YamlPath, limits: { min?: number; max: number }): (YamlNode | null)[] | null {
    const resolved = this.resolve(node);
    if (!isSeq(resolved)) {
      this.problem(node, path, `expected a list (lines starting with \`- \`), got ${this.kind(resolved)}`);
      return null;
    }
    // Counted before anything in it is read: a list past its limit costs nothing more.
    const { items } = resolved as YAMLSeq<unknown>;
    if (items.length > limits.max) {
      this.problem(resolved, path, `expected at most ${limits.max} items, got ${items.length}`);
      return null;
    }
    if (limits.min !== undefined && items.length < limits.min) {
      this.problem(resolved, path, `expected at least ${limits.min} item${limits.min === 1 ? '' : 's'}, got none`);
      return null;
    }
    return items.map((item) => this.resolve(item));
  }

  /**
   * A text value. A plain (unquoted) number or boolean counts as text, taken as written
   * (`version: 1.10` is "1.10", not 1.1), so users need not quote versions and ports.
   */
  text(node: YamlNode | null, path: YamlPath, limits: TextLimits = {}): string | null {
    const resolved = this.resolve(node);
    let value: string | null = null;
    if (isScalar(resolved)) {
      if (typeof resolved.value === 'string') value = resolved.value;
      else if (
        (typeof resolved.value === 'number' || typeof resolved.value === 'boolean') &&
        resolved.type === 'PLAIN' &&
        resolved.range
      )
        value = this.source.slice(resolved.range[0], resolved.range[1]).trim();
    }
    if (value === null) {
      this.problem(node, path, `expected ${limits.what ?? 'a string'}, got ${this.kind(resolved)}`);
      return null;
    }
    const min = limits.minLength ?? 0;
    if (value.length < min) {
      this.problem(node, path, min === 1 ? 'must not be empty' : `must be at least ${min} characters long`);
      return null;
    }
    if (limits.maxLength !== undefined && value.length > limits.maxLength) {
      this.problem(node, path, `must be at most ${limits.maxLength} characters long, got ${value.length}`);
      return null;
    }
    if (limits.givenToPrograms && value.includes('\0')) {
      // Node refuses it at every start (`Arguments cannot contain null bytes`): every job would fail.
      const at = value.indexOf('\0');
      this.problem(
        node,
        path,
        `holds a NUL character (\`\\0\`, at character ${at + 1}), which no program can be given`,
      );
      return null;
    }
    if (limits.pattern && !new RegExp(limits.pattern, 'u').test(value)) {
      this.problem(node, path, `${limits.patternHint ?? `must match \`${limits.pattern}\``}, got \`${clip(value)}\``);
      return null;
    }
    return value;
  }

  /** A string value that was written as a string (a YAML number or boolean is refused). */
  strictString(node: YamlNode | null, path: YamlPath, hint?: string): string | null {
    const resolved = this.resolve(node);
    if (isScalar(resolved) && typeof resolved.value === 'string') return resolved.value;
    this.problem(node, path, `expected a string${hint ? ` (${hint})` : ''}, got ${this.kind(resolved)}`);
    return null;
  }

  boolean(node: YamlNode | null, path: YamlPath): boolean | null {
    const resolved = this.resolve(node);
    if (isScalar(resolved) && typeof resolved.value === 'boolean') return resolved.value;
    this.problem(node, path, `expected true or false, got ${this.kind(resolved)}`);
    return null;
  }

  number(node: YamlNode | null, path: YamlPath): number | null {
    const resolved = this.resolve(node);
    if (isScalar(resolved) && typeof resolved.value === 'number' && Number.isFinite(resolved.value))
      return resolved.value;
    this.problem(node, path, `expected a number, got ${this.kind(resolved)}`);
    return null;
  }

  /** A scalar's value as YAML typed it (string, number, boolean), or null after a problem. */
  scalar(node: YamlNode | null, path: YamlPath, what: string): string | number | boolean | null {
    const resolved = this.resolve(node);
    if (isScalar(resolved) && ['string', 'number', 'boolean'].includes(typeof resolved.value))
      return resolved.value as string | number | boolean;
    this.problem(node, path, `expected ${what}, got ${this.kind(resolved)}`);
    return null;
  }

  /** The node's position-independent description for "got ..." messages. */
  kind(node: YamlNode | null | undefined): string {
    if (node === null || node === undefined) return 'nothing';
    if (isMap(node)) return 'a map';
    if (isSeq(node)) return 'a list';
    if (isScalar(node)) {
      const value = (node as Scalar).value;
      if (value === null || value === undefined) return 'nothing';
      if (this.#concealValues) {
        if (typeof value === 'string') return 'a string';
        if (typeof value === 'number' || typeof value === 'boolean') return `a ${typeof value}`;
        return 'an unsupported value'; // `!!binary`, `!!timestamp`: it read `got a object`
      }
      if (typeof value === 'string') return `\`${clip(value)}\``;
      if (typeof value === 'number' || typeof value === 'boolean') return `\`${String(value)}\` (${typeof value})`;
    }
    return 'an unsupported value';
  }
}

export interface ReaderOptions {
  /** Never quote a value in a message (the secrets file: its problems reach job errors). */
  concealValues?: boolean;
  /** What to do about a second document, after "a second YAML document starts here: ". */
  oneDocument?: string;
}

const ONE_DOCUMENT = 'the file holds one document; remove that line and what follows';

/**
 * How many characters of a file's text its aliases may repeat in all (each alias read counts the
 * text of its anchored node): as much again as the largest workflow file, 1 MiB.
 */
export const MAX_ALIASED_CHARS = 1024 * 1024;

export interface MapEntry {
  keyNode: YamlNode;
  node: YamlNode | null;
}

export interface TextLimits {
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  /** Replaces "must match `pattern`" in the message. */
  patternHint?: string;
  /** Replaces "a string" in "expected a string, got ...". */
  what?: string;
  /** Refuse a NUL character: the value becomes a program's argument, variable or directory. */
  givenToPrograms?: boolean;
}

function clip(value: string): string {
  const line = value.split('\n')[0] ?? '';
  return line.length > 40 || line !== value ? `${line.slice(0, 40)}…` : value;
}

/** YAML 1.1's merge key, which the parser reads as an ordinary key (YAML 1.2 has none). */
const MERGE_KEY = '<<';
const MERGE_KEY_HINT =
  'merge keys (`<<: *anchor`) are not taken: write the keys out (an alias may stand for each value)';

/** The key (written as a plain or quoted scalar) that starts at `offset` in `doc`, or null. */
function keyAt(doc: Document.Parsed, offset: number): string | null {
  let found: string | null = null;
  visit(doc, {
    Pair(_, pair) {
      const key = pair.key;
      if (isScalar(key) && key.range?.[0] === offset) {
        found = String(key.value);
        return visit.BREAK;
      }
      return undefined;
    },
  });
  return found;
}

function syntaxMessage(message: string): string {
  // yaml's messages may carry a source excerpt after the first line; the position says it already.
  const first = message.split('\n')[0] ?? message;
  return first.replace(/ at line \d+, column \d+:?$/, '');
}
