// Package ingest turns a harness's message log into ctxstore's view of a
// session (issue 5 item 8; 000 §22.2): a cursor over the log, so that each
// call applies only the messages that are new; user and assistant messages
// become chat turns and stream items; tool results become toolcall objects
// (through the agent tools of package tools, which index the files they
// touch). Harness converters and the HTTP service produce the harness-neutral
// conversation.Message it reads.
package ingest
