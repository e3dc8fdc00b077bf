import { ConfigError, loadConfig, type ConfigFlags } from '../../src/config/config.js';

/** The problems a configuration loader reports (ConfigError), or none when `load` succeeds. */
export function problemsOf(load: () => unknown): string[] {
  try {
    load();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

/** The coordinator configuration's problems for this environment and these flags. */
export const configProblems = (env: Record<string, string>, flags: ConfigFlags = {}): string[] =>
  problemsOf(() => loadConfig(env, flags));
