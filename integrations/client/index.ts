// ctxstore's TypeScript client, shared by the Pi extension and the OpenClaw plugin: the API's
// bodies (api.ts), the HTTP client and its errors (client.ts), the delta protocol (deltas.ts).
export * from "./api.ts";
export * from "./client.ts";
export * from "./deltas.ts";
