package tokens_test

import (
	"context"
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/tokens"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/session"
)

// The tokenizer plugs into the assembler through Options.Tokenizer: with
// the literal layout, which counts each context whole, an assembled
// context's Tokens is exactly the tokenizer's count of its bytes.
func TestAssemblerOption(t *testing.T) {
	ctx := context.Background()
	e := storetestenv.New(t, storetestenv.SQLite)
	s, err := session.Create(ctx, e.Store, e.ID("tok"), session.CreateOptions{SystemPrompt: "You are terse."})
	if err != nil {
		t.Fatal(err)
	}
	tk := tokens.Default()
	a, err := assemble.New(ctx, s, assemble.Options{Layout: assemble.LayoutLiteral, Tokenizer: tk})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.User(ctx, "Summarise the design of the session store in three sentences, please."); err != nil {
		t.Fatal(err)
	}
	c, err := a.Call(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := tk.Count(string(c.Bytes)); c.Tokens != want || want == (assemble.BytesTokenizer{}).Count(string(c.Bytes)) {
		t.Fatalf("Tokens = %d, want %d (bytes/4: %d)", c.Tokens, want, (assemble.BytesTokenizer{}).Count(string(c.Bytes)))
	}
}
