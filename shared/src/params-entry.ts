/**
 * `@drover/shared/params`: the rules of param values without any Node module, for the dashboard
 * (a browser), so that its run form checks a value exactly as the coordinator does, with the same
 * pattern engine (loaded on first use: a chunk of its own in the dashboard's build).
 */
export { paramValueProblem } from './params.js';
export { loadPatternEngine, PatternBudget } from './pattern-match.js';
export type { ParamDefinition } from './wire.js';
