// Test-only Pi extension: the command `/tree-to ENTRY_ID` moves the session's leaf to that entry
// (ctx.navigateTree, what Pi's /tree does), without a branch summary. Pi's RPC mode has no tree
// command; a prompt naming an extension command runs it.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function treeCommand(pi: ExtensionAPI) {
  pi.registerCommand("tree-to", {
    description: "Move the session's leaf to an entry (tests)",
    handler: async (args, ctx) => {
      await ctx.navigateTree(args.trim(), { summarize: false });
    },
  });
}
