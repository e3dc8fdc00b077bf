/**
 * How a param reaches a step's environment (docs/agent.md, "Step environment"), shared by the
 * agent (which sets the variables) and the coordinator (which refuses params that would set the
 * same variable), so that both agree on which names collide.
 */

/**
 * `DROVER_PARAM_<NAME>`: every character but an ASCII letter or digit turned into `_`, then
 * upper-cased. ASCII only, so that no Unicode case mapping (`ſ` → `S`, `ß` → `SS`) makes two
 * names that look different collide.
 */
export function paramEnvName(name: string): string {
  return `DROVER_PARAM_${name.replace(/[^A-Za-z0-9]/g, '_').toUpperCase()}`;
}

/** A name whose variable an earlier name already sets. */
export interface ParamEnvClash {
  name: string;
  /** Its position among the names given. */
  index: number;
  /** The earlier name that sets the same variable. */
  first: string;
  env: string;
}

/** Each name (in order) that would set the same `DROVER_PARAM_<NAME>` as an earlier, different one. */
export function paramEnvClashes(names: Iterable<string>): ParamEnvClash[] {
  const seen = new Map<string, string>();
  const clashes: ParamEnvClash[] = [];
  let index = 0;
  for (const name of names) {
    const env = paramEnvName(name);
    const first = seen.get(env);
    if (first === undefined) seen.set(env, name);
    else if (first !== name) clashes.push({ name, index, first, env });
    index++;
  }
  return clashes;
}

/** "`SAFE` and `safe` would both be the environment variable DROVER_PARAM_SAFE" */
export function describeParamEnvClash(clash: Omit<ParamEnvClash, 'index'>): string {
  return `\`${clash.name}\` and \`${clash.first}\` would both be the environment variable ${clash.env}`;
}
