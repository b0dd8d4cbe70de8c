package objects

import "testing"

func TestTurnUserText(t *testing.T) {
	for _, c := range []struct {
		user any
		want string
	}{
		{"plain", "plain"},
		{[]any{map[string]any{"type": "text", "text": "a"}, map[string]any{"type": "image", "text": "not text"}, map[string]any{"type": "text", "text": "b"}}, "a\nb"},
		{[]any{map[string]any{"type": "image"}}, ""},
		{nil, ""},
	} {
		if got := (Turn{User: c.user}).UserText(); got != c.want {
			t.Errorf("UserText(%v) = %q, want %q", c.user, got, c.want)
		}
	}
}
