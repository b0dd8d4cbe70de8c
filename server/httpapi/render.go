package httpapi

import "github.com/ctxstore/ctxstore/context/assemble"

// renderFor is the rendering a new session of harness h is assembled
// with: OpenClaw sends the turn's prompt, tool calls and results itself
// after the context it is given (its context engine gets the history
// before the current turn), so its sessions keep the prompt a message of
// its own, before ctxstore's notes of the turn (assemble.RenderUserFirst),
// and what OpenClaw sent comes back unchanged a turn later
// (docs/openclaw.md, "Byte-stable turns"). Every other harness gets the
// default (0: assemble.RenderVersion). A resumed session keeps the
// rendering it began with.
func renderFor(h string) int {
	if h == "openclaw" {
		return assemble.RenderUserFirst
	}
	return 0
}
