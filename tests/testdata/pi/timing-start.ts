// Test-only Pi extension for benchmarks, loaded before ctxstore's: its context handler notes when
// each LLM call's context event starts (timing-end.ts, loaded after, writes the elapsed time).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function timingStart(pi: ExtensionAPI) {
  pi.on("context", () => {
    (globalThis as any).__ctxstoreTimingT0 = performance.now();
    return undefined;
  });
}
