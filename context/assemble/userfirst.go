package assemble

// RenderUserFirst is rendering 6, for a harness that sends the turn's user
// message to the model itself before the assembler sees it (OpenClaw: its
// context engine is handed the history before the current turn, and the
// harness appends the turn's messages). Such a harness has already sent
// the turn's prompt as a message of its own, right after the previous
// call's context, and then its tool calls and results; the assembler meets
// all of them one call later. For those bytes to come back unchanged:
//
//   - a user message is a message of its own (frag.alone): it joins no
//     message before it (the notes that ended the previous call stay the
//     message they were) and nothing joins it (the notes that follow start
//     a message of their own);
//
//   - User does not first bring the stream up to date: what changed since
//     the previous event (a collapse at the turn's start, what the turn's
//     tools did through the service) is shown by the next sync, at the
//     call (or after the turn's first tool results, when they are not
//     reported as sent), not between the previous call's context and the
//     prompt, where the harness sent nothing.
//
//   - a tool result the harness sent in its own form (ToolResultSent: a
//     read's output where ctxstore shows a line and a content block, an
//     output whole where ctxstore shows a preview) renders as sent until
//     a rebase rewrites it; from the rebase on it is ctxstore's. What it
//     holds beyond ctxstore's form (the file a content block repeats, the
//     output beyond its preview) counts as stale tokens, so the cost model
//     (Decide) schedules that rewrite in a batch, as it does for collapsed
//     content, rather than changing the turn's bytes at once. What the
//     call changed (a read's metadata line and content block) is shown by
//     the next sync, at the call, after the turn's last message, not
//     between the result and the turn's next step.
//
//   - what a later call adds (a note, a metadata line, a content block)
//     starts a message of its own when the previous call's context ended
//     in a user message of ctxstore's (item.opens), instead of becoming a
//     block more in that message: the harness sent its own messages after
//     it, so the message it sent is the one it sees again.
//
// Otherwise it is rendering 5. RenderVersion stays what other sessions
// get: a harness that asks ctxstore for the context of every call,
// current turn included (Pi), sees its prompt in ctxstore's answer from
// the first call, and joining the notes to it changes nothing it sent.
const RenderUserFirst = 6

// newestRender is the newest rendering version this code knows: what
// ReadCommit and newStyle accept.
const newestRender = RenderUserFirst

// userFirstRules are rendering 6's rules: rendering 5's, a user message
// first and whole, and tool results kept as the harness sent them.
type userFirstRules struct{ bareRules }

func (userFirstRules) userFirst() bool { return true }
func (userFirstRules) keepsSent() bool { return true }
