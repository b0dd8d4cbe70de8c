// Package objects is ctxstore's object model: kinds, the immutable envelope
// and mutable payload of every object, id rules, the four hashes, static and
// dynamic references, and the default metadata views.
//
// The package is pure. It performs no I/O, never reads the clock (times are
// passed in), never touches a filesystem or a store, and keeps no global
// mutable state. Store access, file indexing and rendering of whole contexts
// live in other packages and call into this one.
//
// # Documents
//
// An [Object] serialises to a flat JSON document (a map[string]any) whose id
// key is "xt/id", as a bitemporal document store expects, with [Object.Doc],
// and is read back with [FromDoc]. The round trip is lossless at the JSON
// level: fields this package does not model are preserved in
// [Payload.Extra], and FromDoc(d).Doc() canonicalises to the same bytes as d.
//
// # Hashes
//
// Every hash is SHA-256, written as 64 lowercase hexadecimal digits with no
// prefix. Structured inputs are first put into RFC 8785 canonical JSON by
// [Canonical]; see docs/objects.md for the exact inputs of identity_hash,
// source_hash, content_hash and metadata_view_hash.
//
// # Errors
//
// Every validation error wraps [ErrInvalid] and names the offending field
// (see [FieldError]); hash checks fail with [ErrHashMismatch] (see
// [HashMismatchError]).
package objects
