// Package sessionbundle moves one agent session between stores: a bundle
// (docs/formats/sessionbundle.md) is a manifest naming the session and
// every entity it needs, followed by a portable version log
// (docs/formats/versionlog.md) restricted to those entities, with their
// whole history.
//
// The entities are the session's own documents (its head "session:{id}"
// and every document that carries its id in "session_id": the session
// package's chunk documents, the context commits "ctx-{id}-{n}", ...), its
// chat and system prompt, every object in its session index, and every
// object its context commits or its chat reference. Each carries its full
// history, so the target answers any read of them as the source did, at
// every basis mapped by transaction order.
//
// Import applies the log with versionlog.Import under a cursor of its own
// (the log's source id is "session:{id}@{source store id}"), so it is
// atomic per source transaction, resumable after a crash, and idempotent:
// importing the same bundle twice changes nothing. The bundle is checked
// whole before anything is written.
//
// Transaction ids differ between the stores, and context commits record
// static references (id@tx#c=…,i=…,m=…) with the source's tx ids. They stay
// valid because context/expand resolves a static reference by its hashes
// when the version as of its tx is missing or different: every past call
// of an imported session rebuilds byte for byte (assemble.Rebuild).
package sessionbundle
