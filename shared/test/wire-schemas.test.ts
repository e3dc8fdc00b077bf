import type { FromSchema } from 'json-schema-to-ts';
import { describe, expect, it } from 'vitest';
import * as shared from '../src/index.js';

/**
 * Each wire schema is written beside a TypeScript type of the same name, by hand, so that the
 * type reads well (named nested types, documented fields). This file keeps the two from drifting:
 * the type-check fails, naming the pair, when the values a schema accepts (as json-schema-to-ts
 * reads it) and the values its type allows differ.
 */

/**
 * The type as a plain object type: an interface is not assignable to the `[x: string]: unknown`
 * that json-schema-to-ts adds for a schema without `additionalProperties: false` (a response),
 * while the same members as an object literal type are.
 */
type Plain<T> = T extends (infer U)[] ? Plain<U>[] : T extends object ? { [K in keyof T]: Plain<T[K]> } : T;

/** True when the type and the schema allow the same values: each is assignable to the other. */
type Agree<T, Schema> = [Plain<T>] extends [Schema] ? ([Schema] extends [Plain<T>] ? true : false) : false;

interface Pairs {
  EnrollRequest: Agree<shared.EnrollRequest, FromSchema<typeof shared.EnrollRequest>>;
  EnrollResponse: Agree<shared.EnrollResponse, FromSchema<typeof shared.EnrollResponse>>;
  ParamDefinition: Agree<shared.ParamDefinition, FromSchema<typeof shared.ParamDefinition>>;
  WorkflowStep: Agree<shared.WorkflowStep, FromSchema<typeof shared.WorkflowStep>>;
  WorkflowDefinition: Agree<shared.WorkflowDefinition, FromSchema<typeof shared.WorkflowDefinition>>;
  PutWorkflowsRequest: Agree<shared.PutWorkflowsRequest, FromSchema<typeof shared.PutWorkflowsRequest>>;
  AgentSelf: Agree<shared.AgentSelf, FromSchema<typeof shared.AgentSelf>>;
  PublicWorkflow: Agree<shared.PublicWorkflow, FromSchema<typeof shared.PublicWorkflow>>;
  PutWorkflowsResponse: Agree<shared.PutWorkflowsResponse, FromSchema<typeof shared.PutWorkflowsResponse>>;
  PutAgentLabelsRequest: Agree<shared.PutAgentLabelsRequest, FromSchema<typeof shared.PutAgentLabelsRequest>>;
  PutAgentLabelsResponse: Agree<shared.PutAgentLabelsResponse, FromSchema<typeof shared.PutAgentLabelsResponse>>;
  RejectJobRequest: Agree<shared.RejectJobRequest, FromSchema<typeof shared.RejectJobRequest>>;
  JobLogLine: Agree<shared.JobLogLine, FromSchema<typeof shared.JobLogLine>>;
  AppendJobLogsRequest: Agree<shared.AppendJobLogsRequest, FromSchema<typeof shared.AppendJobLogsRequest>>;
  FinishJobRequest: Agree<shared.FinishJobRequest, FromSchema<typeof shared.FinishJobRequest>>;
  JobCancelEvent: Agree<shared.JobCancelEvent, FromSchema<typeof shared.JobCancelEvent>>;
  DeployReportRequest: Agree<shared.DeployReportRequest, FromSchema<typeof shared.DeployReportRequest>>;
}

/** A pair that disagrees makes its `true` here a type error (`never`). */
const agreeing: { [K in keyof Pairs]: Pairs[K] extends true ? true : never } = {
  EnrollRequest: true,
  EnrollResponse: true,
  ParamDefinition: true,
  WorkflowStep: true,
  WorkflowDefinition: true,
  PutWorkflowsRequest: true,
  AgentSelf: true,
  PublicWorkflow: true,
  PutWorkflowsResponse: true,
  PutAgentLabelsRequest: true,
  PutAgentLabelsResponse: true,
  RejectJobRequest: true,
  JobLogLine: true,
  AppendJobLogsRequest: true,
  FinishJobRequest: true,
  JobCancelEvent: true,
  DeployReportRequest: true,
};

/** The exports of @drover/shared that are JSON schemas of objects. */
const objectSchemas = Object.entries(shared)
  .filter(([, value]) => typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'object')
  .map(([name]) => name)
  .sort();

describe('the wire schemas and their types', () => {
  it('are checked in pairs, every schema @drover/shared exports', () => {
    expect(Object.keys(agreeing).sort()).toEqual(objectSchemas);
  });
});
