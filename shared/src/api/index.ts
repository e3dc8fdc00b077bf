/**
 * The coordinator's API as types, for its clients (the dashboard, the CLI): generated from the
 * OpenAPI document it serves (`GET /v1/openapi.json`, committed as shared/openapi/openapi.json) by
 * `pnpm gen:api`, so that a client reads and sends what the server's schemas say. Types only: this
 * entry holds no code.
 */
import type { components, operations } from './openapi.js';

export type { components, operations, paths } from './openapi.js';

/** A named shape of the API (`#/components/schemas/<Name>`): `Schema<'Job'>`. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];

type JsonOf<Message> = Message extends { content: { 'application/json': infer Body } } ? Body : never;

/** The JSON answer of an operation (by its operationId) with a success status: `Answer<'listJobs'>`. */
export type Answer<
  Operation extends keyof operations,
  Status extends keyof operations[Operation]['responses'] = 200 & keyof operations[Operation]['responses'],
> = JsonOf<operations[Operation]['responses'][Status]>;

/** The JSON body an operation takes: `RequestBody<'createTrigger'>`. */
export type RequestBody<Operation extends keyof operations> = JsonOf<NonNullable<operations[Operation]['requestBody']>>;

/** The query parameters an operation takes: `Query<'listJobs'>`. */
export type Query<Operation extends keyof operations> = NonNullable<operations[Operation]['parameters']['query']>;
