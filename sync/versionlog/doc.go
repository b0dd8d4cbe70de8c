// Package versionlog is ctxstore's portable version log: a streamed,
// line-oriented, versioned file (JSON Lines) that carries the full
// bitemporal history of any store.Store, and the export, import and
// incremental sync built on it. The format is specified in
// docs/formats/versionlog.md; this package is its reference implementation.
//
// A log is a header line, then for each committed source transaction (in tx
// id order) the doc lines it needs followed by one tx line, then an end
// line with counts and a SHA-256 checksum of every line before it. Every op
// is explicit: a put or delete carries its valid_from (the source tx time
// when it had none) and its valid_to (null when open-ended), a match its
// valid_from. Documents travel once each as canonical JSON (RFC 8785) under
// their SHA-256 content hash, and ops refer to them by hash; a reader keeps
// a bounded window of recent documents, so both sides run in memory
// independent of the log's length.
//
// Import applies each source transaction as one target transaction that
// also advances a cursor document (CursorID) in the target, so an import is
// atomic per transaction, can be killed at any moment and resumed, and
// applying a log twice changes nothing. Sync is export piped into import,
// starting after the target's cursor.
//
// Nothing here depends on a backend: Export reads store.Store.TxLog in
// pages, Import writes with store.Store.Submit, or with SubmitAt (keeping
// the original tx times) when the target has it, as bitemporal.Store does.
package versionlog
