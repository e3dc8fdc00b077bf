import type { FastifyRequest } from 'fastify';

/**
 * `check` made to run once per request: a route's hook and its handler may both ask, and they
 * share the first answer (a refusal too). For checks with a cost or a side effect (a JWT
 * verified, a user read, a nonce spent).
 */
export function oncePerRequest<T>(
  check: (request: FastifyRequest) => Promise<T>,
): (request: FastifyRequest) => Promise<T> {
  const answers = new WeakMap<FastifyRequest, Promise<T>>();
  return (request) => {
    let answer = answers.get(request);
    if (!answer) {
      answer = check(request);
      answers.set(request, answer);
    }
    return answer;
  };
}
