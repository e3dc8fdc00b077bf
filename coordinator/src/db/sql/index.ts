export type { Database } from './database.js';
export type { Dialect } from './dialect.js';
export { all, lock, one, rows, run, script, type Flow } from './flow.js';
export { flag, flagOrNull, isSet, isUniqueViolation, json, jsonRecords } from './rows.js';
export { command, manyRows, query, values, type Command, type Named, type Params, type Query } from './statement.js';
