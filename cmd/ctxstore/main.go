// Command ctxstore is a command-line client for a ctxstore bitemporal
// document store: it writes JSON documents, reads them back at any point
// in valid and transaction time, queries them and shows the transaction
// log. See docs/cli.md.
//
// Data goes to stdout (JSON with --json), errors to stderr as
// "ctxstore: <message>". Exit status: 0 ok, 1 error, 2 usage error.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
