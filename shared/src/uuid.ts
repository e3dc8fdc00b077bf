/** A UUID in its 8-4-4-4-12 hex form, either case: as a JSON schema `pattern` and as a RegExp. */
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
export const UUID_REGEX = new RegExp(UUID_PATTERN);
