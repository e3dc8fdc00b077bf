/**
 * Set by the single-executable build when it is given `--agent-version` (an esbuild `define`):
 * a release build stamps the version it ships as (docs/agent.md, "Self-update"). Undefined
 * everywhere else.
 */
declare const __DROVER_AGENT_VERSION__: string | undefined;

/** The agent's version: reported at enrollment and at every connect of the stream, and by `--version`. */
export const AGENT_VERSION: string = typeof __DROVER_AGENT_VERSION__ === 'string' ? __DROVER_AGENT_VERSION__ : '0.1.0';
