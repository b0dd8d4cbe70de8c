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
//   - User does not first bring the stream up to date: what changed since
//     the previous event (a collapse at the turn's start, what the turn's
//     tools did through the service) is shown by the next sync, after the
//     turn's first tool results or at the call, not between the previous
//     call's context and the prompt, where the harness sent nothing.
//
// Otherwise it is rendering 5. RenderVersion stays what other sessions
// get: a harness that asks ctxstore for the context of every call,
// current turn included (Pi), sees its prompt in ctxstore's answer from
// the first call, and joining the notes to it changes nothing it sent.
const RenderUserFirst = 6

// newestRender is the newest rendering version this code knows: what
// ReadCommit and newStyle accept.
const newestRender = RenderUserFirst

// userFirstRules are rendering 6's rules: rendering 5's, and a user
// message first and whole.
type userFirstRules struct{ bareRules }

func (userFirstRules) userFirst() bool { return true }
