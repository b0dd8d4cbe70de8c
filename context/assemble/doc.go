// Package assemble builds, for every model call of a session, exactly what
// the model sees, in an order that keeps provider prefix caches warm, and
// records each call as a context commit so that any past call's context
// can be rebuilt byte for byte from the store.
//
// # Layouts
//
// LayoutStream (the default): the fixed system prompt and tool list, then a
// snapshot of the metadata pool and the active content taken when the
// Assembler starts, then one append-only stream in which chat messages (tool
// results as one-line references, or the live output itself), a metadata
// entry for each newly discovered object and each active content block appear
// where they happen. Deactivations (by the agent or the auto-collapse
// policy) do not rewrite anything at once: an appended note tells the model,
// and the stale content stays rendered until a rebase, which a small cost
// model (Decide) schedules in batches. A rebase keeps every item before the
// first stale content block and rewrites the stream from there, each stale
// block becoming a one-line "collapsed:" reference or leaving the stream.
//
// LayoutLiteral: the plain order, kept for comparison: a metadata pool
// block, the chat, then an active-content block, re-rendered each call.
//
// # Parts
//
// An Assembler is a session (session.Session), its store and its options,
// and these parts, each owning its state (and the methods that use only
// it, or it and the stream):
//
//   - stream (stream.go): the items and their rendering: head, bytes,
//     offsets, tokens, stale tokens. Only push appends and only cut (a
//     rebase) truncates, so between rebases each call's bytes extend the
//     previous call's.
//   - headState (head.go): the system prompt and, for a LeanHead, whether
//     the managed head (guide and every tool) replaced the lean one.
//   - frozenPrefix (frozen.go): the leading items no later call can
//     change: their messages and tokens counted and their bytes hashed
//     once (advance, digest), where the stable messages end
//     (stableMessages) and, with Options.Release, what left memory.
//   - holdings (sync.go): what the model holds of each object: which ids
//     are listed, which content is live and at which version, the patches
//     shown since, and the versions read from the store (resolve).
//   - toolCalls (inputs.go): where each tool call was made, which wait for
//     their result, and the large inputs that can collapse (input).
//   - paging (paging.go): outputs entered as a preview, ids offered to fit
//     the window, and a bare head's spill files.
//   - rhythm (call.go): the calls so far, their clock and the Shape the
//     cost model reads (userTurn, startCall, endCall).
//   - recorder (commit.go): what the next context commit records beyond
//     the items: from which item it stores them (base, rewrote), the
//     shown map as changes, the system prompt's reference once.
//
// The Assembler's own methods are the events (User, Assistant, ToolResult,
// Call) and the steps that read several parts: sync (the stream brought
// up to date with the session), rebase, patches, collapsible inputs,
// commit.
//
// How items render and which stream rules apply is a style, fixed when a
// session opens: its rendering (one value per rendering version: the text
// of each kind of item), its rules (rules.go: an interface with one
// implementation for each version that changed them, each the previous
// one with what it changed; the literal layout keeps only those that are
// not about the stream), its metadata line version, its Paths and a bare head's
// spill directory. A new session takes RenderVersion, or the rendering its
// harness asks for (Options.Render: RenderUserFirst for a harness that
// sends the turn's prompt and tool results itself, userfirst.go: the
// results it sent render as sent until a rebase, ToolResultSent); a
// resumed or rebuilt one takes its root commit's, so an old session
// renders as it was sent by construction: no code compares version
// numbers.
//
// Call assembles a call and writes its commit (call.go, commit.go);
// Resume rebuilds an Assembler from the commits; a Rebuilder rebuilds a
// session's past calls from the store in one pass, and Rebuild one call
// (rebuild.go); ReadCommit reads a commit as stored.
//
// # Guarantees
//
// In LayoutStream, between rebases the bytes of each call (Assembled.Bytes)
// are a byte-exact extension of the previous call's; a rebase changes bytes
// only from the offset of the first rewritten item (Assembled.RebaseOffset).
// Every call writes a context commit "ctx-{session}-{n}" holding static
// references (id, tx, hashes) to every object it rendered, the chat items
// it added, the layout and the rebase boundary; Rebuild re-renders the same
// bytes from any store handle and checks them against the SHA-256 the
// commit records.
//
// # Cost
//
// The work of one Call grows with what is new since the previous call (new
// pool entries, new active objects, version checks of the active set), not
// with the session's length: items, byte rendering and commits are
// incremental, and a commit stores only the items added since its parent.
// A rebase costs time proportional to the stream after its boundary.
package assemble
