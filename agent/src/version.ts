/** The agent's version, reported at enrollment. */
export const AGENT_VERSION = '0.1.0';
