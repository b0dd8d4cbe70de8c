// Test-only Pi extension: appends a per-call reminder to every request, after ctxstore has answered
// (context_with_system handlers run in load order; load it after ctxstore's). Its text changes on
// every call, as reminders of other extensions do: a prompt-cache breakpoint on it would never be
// read back.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function reminder(pi: ExtensionAPI) {
  let n = 0;
  pi.on("context_with_system", (event) => {
    n++;
    return { messages: [...event.messages, { role: "user", content: `[reminder ${n}] keep going`, timestamp: 0 }] };
  });
}
