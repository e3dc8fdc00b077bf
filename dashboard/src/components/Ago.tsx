import { ago, dateTime } from './time';

/**
 * When something happened as lists show it, `5 min ago` (after `prefix`, as in `last seen 5 min
 * ago`), with its date and time as a title and in the element's machine-readable attribute.
 */
export function Ago({ at, prefix }: { at: string; prefix?: string }) {
  return (
    <time dateTime={at} title={dateTime(at)}>
      {prefix ? `${prefix} ${ago(at)}` : ago(at)}
    </time>
  );
}
