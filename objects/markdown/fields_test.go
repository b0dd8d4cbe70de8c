package markdown

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/objects"
)

func TestResolve(t *testing.T) {
	n := mustParse(t, "[[Plan]] [[plan-alias|p]] [[Missing]] [[#Local]] ![[Plan#^b1]] [spec](specs/store.md) [[Gone]]")
	calls := map[string]int{}
	ids := map[string]string{
		"Plan":           "019c8012-0000-7000-8000-000000000001",
		"plan-alias":     "019c8012-0000-7000-8000-000000000001",
		"specs/store.md": "9b4e5a16d2f0c8a2f9e1c3b5d7a9e0f1c2b3a4d5e6f708192a3b4c5d6e7f8091",
		"Gone":           "", // found but without an id: still dangling
	}
	got := Resolve(n.Links, func(target string) (string, bool) {
		calls[target]++
		id, ok := ids[target]
		return id, ok
	})
	type short struct {
		Target, Heading, BlockRef, ID string
		Dangling                      bool
	}
	want := []short{
		{Target: "Plan", ID: ids["Plan"]},
		{Target: "plan-alias", ID: ids["Plan"]},
		{Target: "Missing", Dangling: true},
		{Heading: "Local"},
		{Target: "Plan", BlockRef: "b1", ID: ids["Plan"]},
		{Target: "specs/store.md", ID: ids["specs/store.md"]},
		{Target: "Gone", Dangling: true},
	}
	var gotShort []short
	for i, r := range got {
		if !reflect.DeepEqual(r.Link, n.Links[i]) {
			t.Errorf("link %d changed: %+v", i, r.Link)
		}
		gotShort = append(gotShort, short{r.Target, r.Heading, r.BlockRef, r.ID, r.Dangling})
	}
	if !reflect.DeepEqual(gotShort, want) {
		t.Fatalf("got  %+v\nwant %+v", gotShort, want)
	}
	wantCalls := map[string]int{"Plan": 1, "plan-alias": 1, "Missing": 1, "specs/store.md": 1, "Gone": 1}
	if !reflect.DeepEqual(calls, wantCalls) {
		t.Errorf("lookup calls %v, want %v (once per distinct target, never for same-note links)", calls, wantCalls)
	}
}

func TestResolveEdgeCases(t *testing.T) {
	if got := Resolve(nil, nil); got != nil {
		t.Errorf("Resolve(nil) = %v", got)
	}
	links := []Link{{Kind: KindWikilink, Target: "A"}, {Kind: KindWikilink, Heading: "H"}}
	got := Resolve(links, nil)
	if !got[0].Dangling || got[0].ID != "" || got[1].Dangling {
		t.Errorf("nil lookup: %+v", got)
	}
}

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
	o, err := objects.NewNote(id, f, objects.Str(content))
	if err != nil {
		t.Fatalf("objects.NewNote rejects the fields: %v\n%s", err, dump(f))
	}
	return o
}
