import { parseSelector, SelectorError, type Requirement } from '@drover/shared/labels';
import type { ReactNode } from 'react';

/** A selector as typed: its requirements, or where and why it does not parse. */
export type ParsedSelector =
  { requirements: Requirement[]; error: null } | { requirements: null; error: SelectorError };

/** Parses a selector in the browser, with the coordinator's parser (`@drover/shared/labels`). */
export function parseSelectorText(text: string): ParsedSelector {
  try {
    return { requirements: parseSelector(text), error: null };
  } catch (error) {
    if (error instanceof SelectorError) return { requirements: null, error };
    throw error;
  }
}

/**
 * A label selector input (docs/fleets.md): the syntax in a hint, and while what is typed does
 * not parse, the reason with its position (counted from 0, as the API's message does) and the
 * selector with that position marked.
 */
export function SelectorInput(props: {
  id: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  parsed: ParsedSelector;
  /** What the coordinator said of the selector last sent (a form's 422), shown under it. */
  refusals?: string[];
  /** Shown under the input, after the syntax (what the selector is for). */
  children?: ReactNode;
}) {
  const { id, value, parsed, refusals = [] } = props;
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const refusalId = `${id}-refusal`;
  const described = [parsed.error ? errorId : null, refusals.length > 0 ? refusalId : null, hintId];
  return (
    <div className="field selector-field">
      <label htmlFor={id}>{props.label}</label>
      <input
        id={id}
        type="search"
        className="selector-input"
        value={value}
        onChange={(e) => props.onChange(e.target.value)}
        placeholder="site in (berlin,munich),role=gateway"
        spellCheck={false}
        autoCapitalize="off"
        autoComplete="off"
        aria-invalid={parsed.error || refusals.length > 0 ? true : undefined}
        aria-describedby={described.filter((d) => d !== null).join(' ')}
      />
      <span id={hintId} className="hint">
        Requirements separated by commas, all of which an agent&apos;s labels must meet: <code>key</code>,{' '}
        <code>!key</code>, <code>key=value</code>, <code>key!=value</code>, <code>key in (a,b)</code>,{' '}
        <code>key notin (a,b)</code>.
      </span>
      {props.children}
      {parsed.error && <SelectorProblem id={errorId} text={value} error={parsed.error} />}
      {refusals.length > 0 && (
        <span id={refusalId} className="field-error">
          {refusals.join('; ')}
        </span>
      )}
    </div>
  );
}

function SelectorProblem({ id, text, error }: { id: string; text: string; error: SelectorError }) {
  const at = Math.min(error.position, text.length);
  return (
    <div className="selector-problem">
      <span id={id} className="field-error">
        Not a label selector: {error.message}
      </span>
      {/* The same position, shown: the words above say it to a screen reader. */}
      <code className="selector-mark" aria-hidden="true">
        {text.slice(0, at)}
        <mark>{at < text.length ? text[at] : ' '}</mark>
        {text.slice(at + 1)}
      </code>
    </div>
  );
}
