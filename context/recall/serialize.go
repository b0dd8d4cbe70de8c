package recall

import (
	"context"
	"strings"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// DefaultMaxBytes caps a serialized conversation (Pi's DEFAULT_MAX_BYTES,
// 50 KiB), keeping the most recent text.
const DefaultMaxBytes = 50 * 1024

// Message is one user or assistant message of a conversation as the
// session index sees it: text only.
type Message struct {
	Role string // "user" or "assistant"
	Text string
	Turn int
}

// Conversation returns the user and assistant text of a session's chat at
// basis b (001 "Serialization contract"): only text blocks, no tool calls,
// thinking or tool results.
func Conversation(ctx context.Context, st store.Store, sessionID string, b store.Basis) ([]Message, error) {
	// Turn by turn, a page of turns at a time: only the texts are kept, so
	// indexing a long session does not hold its whole chat.
	var out []Message
	err := session.EachTurn(ctx, st, sessionID, b, func(i int, t objects.Turn) error {
		out = append(out, turnMessages(i, t)...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Serialize renders messages as Pi's serializeConversation does
// ("[User]: …" and "[Assistant]: …" blocks) and keeps the last maxBytes
// bytes (<= 0: DefaultMaxBytes), cut at a line start, as Pi's truncateTail.
func Serialize(msgs []Message, maxBytes int) string {
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		if m.Role == "user" {
			b.WriteString("[User]: ")
		} else {
			b.WriteString("[Assistant]: ")
		}
		b.WriteString(m.Text)
	}
	return TruncateTail(b.String(), maxBytes)
}

// TruncateTail keeps the last maxBytes bytes of s (<= 0: DefaultMaxBytes),
// starting at a line start when one is in the kept part, and never inside
// a UTF-8 sequence.
func TruncateTail(s string, maxBytes int) string {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if len(s) <= maxBytes {
		return s
	}
	cut := s[len(s)-maxBytes:]
	if i := strings.IndexByte(cut, '\n'); i >= 0 && i < len(cut)-1 {
		return cut[i+1:]
	}
	for len(cut) > 0 && cut[0]&0xC0 == 0x80 {
		cut = cut[1:]
	}
	return cut
}

// compactionSummary reports whether a user message is a harness's
// compaction summary (kept by query_session whatever the cap): Pi and
// Claude Code open them with these words.
func compactionSummary(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, "The conversation history before this point was compacted") ||
		strings.HasPrefix(t, "This session is being continued from a previous conversation") ||
		strings.HasPrefix(t, "<summary>")
}
