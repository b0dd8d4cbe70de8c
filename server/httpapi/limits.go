package httpapi

import "net/http"

// Limits bound the work one context request can ask for (docs/security.md,
// "Limits"): a request over a limit is refused with 413
// too_large naming the limit, before anything is ingested.
type Limits struct {
	// MaxMessages is the longest log (Pi's messages, base included, or
	// ctxstore's log): default 100,000 (a Pi session of 10,000
	// calls holds about 20,000 messages).
	MaxMessages int
	// MaxNewMessages is how many messages one request may add to what the
	// session has ingested: default 5,000. A larger log is sent in parts.
	MaxNewMessages int
	// MaxMessageBytes is the largest message, as JSON: default 8 MiB.
	MaxMessageBytes int
}

func (l Limits) withDefaults() Limits {
	if l.MaxMessages <= 0 {
		l.MaxMessages = 100000
	}
	if l.MaxNewMessages <= 0 {
		l.MaxNewMessages = 5000
	}
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = 8 << 20
	}
	return l
}

func tooLarge(format string, args ...any) *apiError {
	return errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, format, args...)
}

// check refuses a context request over the limits; held is how many
// messages of the log the session has ingested.
func (l Limits) check(req *ContextRequest, held int) error {
	n := len(req.Log)
	if req.Messages != nil {
		n = req.Base + len(req.Messages)
		for i, m := range req.Messages {
			if len(m) > l.MaxMessageBytes {
				return tooLarge("messages[%d] is %d bytes, over the limit of %d bytes per message", req.Base+i, len(m), l.MaxMessageBytes)
			}
		}
	}
	if n > l.MaxMessages {
		return tooLarge("the log has %d messages, over the limit of %d", n, l.MaxMessages)
	}
	if n-held > l.MaxNewMessages {
		return tooLarge("the request adds %d messages to the %d the session has ingested, over the limit of %d per request: send the log in parts (a prefix first)", n-held, held, l.MaxNewMessages)
	}
	return nil
}
