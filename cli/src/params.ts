import path from 'node:path';
import { CliError } from './errors.js';
import { readInputFile } from './input-file.js';

/** commander's collector of a repeatable option. */
export const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/**
 * commander's parser of an option taken once, such as `--selector`: given twice, it is refused
 * (commander would keep the last in silence, where `--selector role=a --selector site=b` reads as
 * both). For an option without a default value.
 */
export const once =
  (flag: string, hint: string) =>
  (value: string, previous: string | undefined): string => {
    if (previous !== undefined)
      throw new CliError(`${flag} is given twice (\`${previous}\` and \`${value}\`): ${hint}`);
    return value;
  };

/**
 * The `params` of a run: the object of `--params-file` (JSON), then each `--param`, in order,
 * over it. `--param name=value` gives the string `value`; `--param name:=json` gives the JSON
 * value (`count:=3`, `dry:=true`, `input:={"__type":"FileRef","id":"..."}`): the API never turns
 * a string into a number or a boolean. A name given twice in `--param` is refused, naming it (which
 * one was meant?); a `--param` over a name of the file is the override it is for.
 */
export function buildParams(cwd: string, pairs: readonly string[], file?: string): Record<string, unknown> {
  // A null-prototype object, set with own data properties: `__proto__` (or `constructor`) is an
  // ordinary name the coordinator judges like any other, never the object's prototype.
  const params: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  if (file !== undefined) {
    for (const [name, value] of Object.entries(readParamsFile(path.resolve(cwd, file)))) setParam(params, name, value);
  }
  const given = new Map<string, string>();
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new CliError(`--param: expected name=value or name:=json, got \`${pair}\``);
    const json = pair[eq - 1] === ':';
    const name = pair.slice(0, json ? eq - 1 : eq);
    if (name === '') throw new CliError(`--param: the name is empty in \`${pair}\``);
    const earlier = given.get(name);
    if (earlier !== undefined) {
      throw new CliError(
        `--param: the param ${name} is given twice (\`${earlier}\` and \`${pair}\`): give each param once`,
      );
    }
    given.set(name, pair);
    const raw = pair.slice(eq + 1);
    if (!json) {
      setParam(params, name, raw);
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      throw new CliError(`--param ${name}:= expects a JSON value (3, true, "text", {...}), got \`${raw}\``);
    }
    setParam(params, name, value);
  }
  return params;
}

/** Sets `name` as an own, enumerable data property (so JSON.stringify sends it), whatever the name. */
function setParam(params: Record<string, unknown>, name: string, value: unknown): void {
  Object.defineProperty(params, name, { value, enumerable: true, writable: true, configurable: true });
}

function readParamsFile(file: string): Record<string, unknown> {
  const text = readInputFile(file, '--params-file');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CliError(`--params-file: ${file} is not JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CliError(`--params-file: ${file} must hold a JSON object of params, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  return `a ${typeof value}`;
}
