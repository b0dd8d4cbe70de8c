// Package assemble builds, for every model call of a session, exactly what
// the model sees (000 §21, 004 §4; issue 5 item 7), in an order that keeps
// provider prefix caches warm, and records each call as a context commit so
// that any past call's context can be rebuilt byte for byte from the store.
//
// # Layouts
//
// LayoutStream (the default): the fixed system prompt and tool list, then a
// snapshot of the metadata pool and the active content taken when the
// Assembler starts, then one append-only stream in which chat messages (tool
// results as one-line toolcall_ref metadata, never their output), a metadata
// entry for each newly discovered object and each active content block appear
// where they happen. Deactivations (by the agent or the auto-collapse
// policy) do not rewrite anything at once: an appended note tells the model,
// and the stale content stays rendered until a rebase, which a small cost
// model (Decide) schedules in batches. A rebase keeps every item before the
// first stale content block and rewrites the stream from there, each stale
// block becoming a one-line "collapsed:" reference.
//
// LayoutLiteral: the spec's literal order, kept for comparison: a metadata
// pool block, the chat, then an active-content block, re-rendered each call.
//
// # Guarantees
//
// In LayoutStream, between rebases the bytes of each call (Call.Bytes) are a
// byte-exact extension of the previous call's; a rebase changes bytes only
// from the offset of the first collapsed item (Call.RebaseOffset). Every
// call writes a context commit "ctx-{session}-{n}" holding static references
// (id, tx, hashes) to every object it rendered, the chat items it added,
// the layout and the rebase boundary; Rebuild re-renders the same bytes from
// any store handle and checks them against the SHA-256 the commit records.
//
// # Cost
//
// The work of one Call grows with what is new since the previous call (new
// pool entries, new active objects, version checks of the active set), not
// with the session's length: items, byte rendering and commits are
// incremental, and a commit stores only the items added since its parent.
// A rebase costs time proportional to the stream after its boundary.
package assemble
