import { randomUUID } from 'node:crypto';

export const newId = (): string => randomUUID();

export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const UUID_RE = new RegExp(UUID_PATTERN);
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID_RE.test(value);
