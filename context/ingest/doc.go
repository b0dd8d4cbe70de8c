// Package ingest turns a harness's message log into ctxstore's view of a
// session: a cursor over the log, so that each
// call applies only the messages that are new; user and assistant messages
// become chat turns and stream items; tool results become toolcall objects
// (through the agent tools of package tools, which index the files they
// touch). Harness converters and the HTTP service produce the harness-neutral
// conversation.Message it reads.
package ingest
