package markdown

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/objects"
)

func TestToNoteFields(t *testing.T) {
	n := mustParse(t, dailyNote)
	f := ToNoteFields(n)
	want := objects.NoteFields{
		Title:   "2024-03-14 Daily",
		Tags:    []string{"daily", "work/ctxstore", "meeting", "🎯", "todo", "y2024"},
		Aliases: []string{"Pi day", "Thursday log"},
		// Targets as written, once each, in order; embeds included.
		Links:       []string{"Alice Smith", "Project Plan", "whiteboard.png", "Architecture", "../specs/store spec.md", "People/Bob Jones", "Carol"},
		Frontmatter: n.Frontmatter,
	}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("got\n%s\nwant\n%s", dump(f), dump(want))
	}
	// The fields are copies.
	f.Frontmatter["title"] = "changed"
	f.Tags[0] = "changed"
	if n.Frontmatter["title"] != "2024-03-14 Daily" || n.Tags[0] != "daily" {
		t.Error("ToNoteFields shares memory with the note")
	}
	// And they make a valid note object.
	mustNewNote(t, ToNoteFields(n), dailyNote)

	if got := ToNoteFields(mustParse(t, "[[#Local]] plain")); got.Links != nil || got.Tags != nil || got.Frontmatter != nil {
		t.Errorf("note without links, tags or frontmatter: %+v", got)
	}
	if got := ToNoteFields(nil); !reflect.DeepEqual(got, objects.NoteFields{}) {
		t.Errorf("ToNoteFields(nil) = %+v", got)
	}
}

func mustNewNote(t testing.TB, f objects.NoteFields, content string) *objects.Object {
	t.Helper()
	id, err := objects.NewUUIDv7(time.UnixMilli(1710400000000), bytes.NewReader(make([]byte, 16)))
	if err != nil {
		t.Fatal(err)
	}
	env, err := objects.NewEnvelope(objects.KindNote, id)
	if err != nil {
		t.Fatal(err)
	}
	o, err := objects.New(env, objects.Payload{Content: &content, Note: f})
	if err != nil {
		t.Fatalf("objects.New rejects the fields: %v\n%s", err, dump(f))
	}
	return o
}
