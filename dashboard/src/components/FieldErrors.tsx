import { ApiError, type ErrorDetail } from '../api/client';
import { ErrorMessage } from './ErrorMessage';

/**
 * A 422's details placed next to the fields they name: `body.cronExpression` goes to the field
 * `cronExpression`, `body.allowedRefs.1` to `allowedRefs`, and with the prefix `body.params`,
 * `body.params.who` to `who`. What names no field of the form stays in the alert above it.
 */
export interface FieldErrors {
  /** The messages for a field, if the API named it. */
  of(field: string): string[];
  /** The attributes that tie an input to its messages. */
  props(field: string): { id: string; 'aria-invalid'?: true; 'aria-describedby'?: string };
  /** The details that name no field of this form. */
  rest: ErrorDetail[];
}

export function fieldErrors(error: unknown, fields: readonly string[], prefix = 'body', idPrefix = 'f'): FieldErrors {
  const byField = new Map<string, string[]>();
  const rest: ErrorDetail[] = [];
  const details = error instanceof ApiError ? error.details : [];
  for (const d of details) {
    const field = d.path.startsWith(`${prefix}.`) ? d.path.slice(prefix.length + 1).split('.')[0] : undefined;
    if (field !== undefined && fields.includes(field)) byField.set(field, [...(byField.get(field) ?? []), d.message]);
    else rest.push(d);
  }
  const of = (field: string) => byField.get(field) ?? [];
  return {
    of,
    rest,
    props: (field) => {
      const id = `${idPrefix}-${field}`;
      return of(field).length > 0 ? { id, 'aria-invalid': true, 'aria-describedby': `${id}-error` } : { id };
    },
  };
}

/**
 * The number inputs of `form` (or of any element: a group inside another form) holding text the
 * browser cannot read as a number (`1e`, `-`, `3-0`): such an input's value is "" as if it were
 * empty, and a form would send nothing for it (the
 * default, no limit) instead of what was typed. Null when there is none; otherwise the 422 the API
 * would answer, at each input's field: the input's id is `<idPrefix>-<field>` (`props` above), the
 * field's path `<prefix>.<field>`. The example the message gives is the input's `data-example`
 * when it has one (a wait in milliseconds, 30000), otherwise 30.
 */
export function unreadableNumbers(form: ParentNode, prefix = 'body', idPrefix = 'f'): ApiError | null {
  const details: ErrorDetail[] = [];
  for (const input of form.querySelectorAll<HTMLInputElement>('input[type="number"]')) {
    if (!input.validity.badInput || !input.id.startsWith(`${idPrefix}-`)) continue;
    const message = `must be a number, such as ${input.dataset.example ?? '30'}`;
    details.push({ path: `${prefix}.${input.id.slice(idPrefix.length + 1)}`, message });
  }
  return details.length === 0 ? null : new ApiError(422, 'validation_failed', 'A number is not valid', details);
}

/** The messages the API gave for one field, under it. */
export function FieldError({
  errors,
  field,
  idPrefix = 'f',
}: {
  errors: FieldErrors;
  field: string;
  idPrefix?: string;
}) {
  const messages = errors.of(field);
  if (messages.length === 0) return null;
  return (
    <span id={`${idPrefix}-${field}-error`} className="field-error">
      {messages.join('; ')}
    </span>
  );
}

/**
 * The alert above a form: for a 422 whose details all sit next to their fields, a sentence that
 * sends the reader there; otherwise the error in plain words with the details that name no field.
 */
export function FormError({ error, errors }: { error: unknown; errors: FieldErrors }) {
  if (!error) return null;
  if (error instanceof ApiError && error.details.length > 0 && errors.rest.length === 0) {
    return (
      <div role="alert" className="error">
        <p>Some fields need a change; the reason is next to each.</p>
      </div>
    );
  }
  if (error instanceof ApiError && error.details.length > 0) {
    return <ErrorMessage error={new ApiError(error.statusCode, error.code, error.message, errors.rest)} />;
  }
  return <ErrorMessage error={error} />;
}
