// The client's bodies (api.ts) compared with the types openapi-typescript generates from
// docs/openapi.yaml. Type-checked only, never loaded: `make typecheck` (scripts/typecheck.sh)
// generates the package @ctxstore/openapi into its install directory and runs tsc on this
// folder; a field one side has and the other lacks, or of another type, fails it.

import type { components, paths } from "@ctxstore/openapi";
import type * as api from "./api.ts";

type S = components["schemas"];

/**
 * true when A and B have the same fields and each is assignable to the other (a field that is
 * optional on one side only, or typed differently, makes it false).
 */
type Same<A, B> = [keyof A] extends [keyof B]
  ? [keyof B] extends [keyof A]
    ? [A] extends [B]
      ? [B] extends [A]
        ? [{ [K in keyof A]-?: undefined extends A[K] ? 1 : 0 }] extends [{ [K in keyof B]-?: undefined extends B[K] ? 1 : 0 }]
          ? [{ [K in keyof B]-?: undefined extends B[K] ? 1 : 0 }] extends [{ [K in keyof A]-?: undefined extends A[K] ? 1 : 0 }]
            ? true
            : false
          : false
        : false
      : false
    : false
  : false;

/** true when the two unions (of field names) are the same. */
type SameSet<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

type Body<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  requestBody?: { content: { "application/json": infer B } };
}
  ? B
  : never;
type Answer<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  responses: { 200: { content: { "application/json": infer R } } };
}
  ? R
  : never;

type ToolsAnswer = Answer<"/v1/tools", "get">;
type ForkAnswer = Answer<"/v1/commits/{ctx}/fork", "post">;

// Each line must be true; a false one names the body that drifted.
export const checks: {
  error: Same<api.ErrorBody, S["Error"]>;
  tools: Same<api.ToolsResponse, ToolsAnswer>;
  tool: Same<api.ToolDefinition, ToolsAnswer["tools"][number]>;
  toolSpec: Same<api.ToolSpec, S["ToolSpec"]>;
  openRequest: Same<api.OpenRequest, S["OpenRequest"]>;
  openResponse: Same<api.OpenResponse, S["OpenResponse"]>;
  closeResponse: Same<api.CloseResponse, S["CloseResponse"]>;
  sessionInfo: Same<api.SessionInfo, S["SessionInfo"]>;
  contextRequest: SameSet<keyof api.ContextRequest, keyof S["ContextRequest"]>;
  contextResponse: SameSet<keyof api.ContextResponse, keyof S["ContextResponse"]>;
  contextResponseFields: Same<Omit<api.ContextResponse, "messages" | "assembled">, Omit<S["ContextResponse"], "messages" | "assembled">>;
  ingestReport: Same<api.IngestReport, S["IngestReport"]>;
  converted: Same<api.Converted, S["Converted"]>;
  toolRequest: Same<api.ToolRequest, S["ToolRequest"]>;
  toolResponse: Same<api.ToolResponse, S["ToolResponse"]>;
  observeRequest: Same<api.ObserveRequest, S["ObserveRequest"]>;
  observeResponse: Same<api.ObserveResponse, S["ObserveResponse"]>;
  objectResponse: Same<api.ObjectResponse, S["ObjectResponse"]>;
  forkRequest: Same<api.ForkRequest, NonNullable<Body<"/v1/commits/{ctx}/fork", "post">>>;
  forkResponse: SameSet<keyof api.ForkResponse, keyof ForkAnswer>;
  forkCommit: ForkAnswer["commit"] extends api.ForkResponse["commit"] ? true : false;
} = {
  error: true,
  tools: true,
  tool: true,
  toolSpec: true,
  openRequest: true,
  openResponse: true,
  closeResponse: true,
  sessionInfo: true,
  contextRequest: true,
  contextResponse: true,
  contextResponseFields: true,
  ingestReport: true,
  converted: true,
  toolRequest: true,
  toolResponse: true,
  observeRequest: true,
  observeResponse: true,
  objectResponse: true,
  forkRequest: true,
  forkResponse: true,
  forkCommit: true,
};
