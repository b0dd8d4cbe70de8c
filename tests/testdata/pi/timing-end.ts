// Test-only Pi extension for benchmarks, loaded after ctxstore's: appends to PI_TIMING_LOG the
// milliseconds the context handlers between timing-start.ts and this one took, per LLM call.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { appendFileSync } from "node:fs";

export default function timingEnd(pi: ExtensionAPI) {
  pi.on("context", () => {
    const t0 = (globalThis as any).__ctxstoreTimingT0 as number;
    appendFileSync(process.env.PI_TIMING_LOG!, `${(performance.now() - t0).toFixed(3)}\n`);
    return undefined;
  });
}
