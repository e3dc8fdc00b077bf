/**
 * An error's message for a log line: its own, then each of its causes' that it does not already
 * hold. pino's error serializer appends every cause's message (`messageWithCauses`), but Drover's
 * errors that wrap another already end with its message (`cannot migrate <url>: ${cause.message}`,
 * kept with `{ cause }` for the stack): their JSON lines said the reason twice.
 */
export function messageWithNewCauses(error: Error): string {
  let message = error.message;
  const seen = new Set<unknown>([error]);
  for (let cause = error.cause; cause instanceof Error && !seen.has(cause); cause = cause.cause) {
    seen.add(cause);
    if (cause.message !== '' && !message.includes(cause.message)) message += `: ${cause.message}`;
  }
  return message;
}

/**
 * A logger's error serializer (pino's `stdSerializers.err`) with a cause's message said once
 * (`messageWithNewCauses`): what the coordinator's and the agent's loggers both use for `err`.
 */
export function withNewCauses<Serialized extends { message: string }>(
  serialize: (error: Error) => Serialized,
): (error: Error) => Serialized {
  return (error) => {
    const serialized = serialize(error);
    if (error instanceof Error) serialized.message = messageWithNewCauses(error);
    return serialized;
  };
}
