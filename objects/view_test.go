package objects

import (
	"strings"
	"testing"
)

func TestMetadataViewAndRender(t *testing.T) {
	objs := sampleObjects(t)
	fileID := objs["file"].ID()
	noteID := objs["note"].ID()
	userID := objs["user"].ID()
	tests := []struct {
		name string
		view string
		line string
	}{
		{"file",
			`{"char_count":13,"file_type":"go","id":"` + fileID + `","path":"/workspace/src/main.go","type":"file"}`,
			"file id=" + fileID + " path=/workspace/src/main.go file_type=go char_count=13"},
		{"toolcall",
			`{"args_display":"ls -la","id":"toolu_01","status":"ok","tool":"bash","type":"toolcall"}`,
			`toolcall_ref id=toolu_01 tool=bash args="ls -la" status=ok`},
		{"chat",
			`{"id":"chat:s1","session_ref":"session:s1","turn_count":1,"type":"chat"}`,
			"chat id=chat:s1 session_ref=session:s1 turn_count=1"},
		{"system_prompt",
			`{"char_count":16,"id":"system_prompt:s1","type":"system_prompt"}`,
			"system_prompt id=system_prompt:s1 char_count=16"},
		{"session", `{"id":"session:s1","type":"session"}`, "session id=session:s1"},
		{"note",
			`{"char_count":32,"id":"` + noteID + `","tags":["todo","ctx/design"],"title":"Plan","type":"note"}`,
			"note id=" + noteID + " title=Plan tags=todo,ctx/design char_count=32"},
		{"user", `{"char_count":13,"id":"` + userID + `","type":"user"}`, "user id=" + userID + " char_count=13"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := objs[tt.name]
			if got := canon(t, MetadataView(o)); got != tt.view {
				t.Errorf("view %s\nwant %s", got, tt.view)
			}
			if got := RenderMetadata(o); got != tt.line {
				t.Errorf("line %q\nwant %q", got, tt.line)
			}
			for k := range MetadataView(o) {
				if !strings.Contains(strings.Join(ViewKeys(o.Kind()), " "), k) {
					t.Errorf("view key %q not in ViewKeys", k)
				}
			}
		})
	}
}

func TestRenderMetadataQuoting(t *testing.T) {
	o := sampleObjects(t)["toolcall"].Clone()
	o.Toolcall.ArgsDisplay = "grep \"a b\"\nsrc/"
	o.Toolcall.Tool = "grep"
	o.Nickname = "search"
	want := `toolcall_ref id=toolu_01 tool=grep args="grep \"a b\"\nsrc/" status=ok nickname=search`
	if got := RenderMetadata(o); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestDefaultArgsDisplay(t *testing.T) {
	long := strings.Repeat("é", 200)
	tests := []struct {
		args map[string]any
		want string
	}{
		{nil, "{}"},
		{map[string]any{}, "{}"},
		{map[string]any{"command": "ls -la"}, "ls -la"},
		{map[string]any{"command": ""}, `{"command":""}`},
		{map[string]any{"n": 1.5}, `{"n":1.5}`},
		{map[string]any{"path": "/a", "limit": 10}, `{"limit":10,"path":"/a"}`},
		{map[string]any{"command": long}, strings.Repeat("é", 119) + "…"},
	}
	for _, tt := range tests {
		if got := DefaultArgsDisplay(tt.args); got != tt.want {
			t.Errorf("DefaultArgsDisplay(%v) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestNullContent(t *testing.T) {
	objs := sampleObjects(t)
	if _, null := NullContent(objs["file"]); null {
		t.Fatal("file with content reported null")
	}
	empty := objs["user"].Clone()
	empty.Content = Str("")
	if _, null := NullContent(empty); null {
		t.Fatal("empty string reported null")
	}
	deleted, err := NewFile(FilesystemSource{FilesystemID: "fs", Path: "/img/logo.png"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		o    *Object
		want string
	}{
		{deleted, "Content unavailable (deleted, unreadable or non-text file): file id=" + deleted.ID() +
			" path=/img/logo.png file_type=png char_count=0"},
		{objs["session"], "Content unavailable (this session has no content): session id=session:s1"},
		{objs["chat"], "Content unavailable (this chat has no content): chat id=chat:s1 session_ref=session:s1 turn_count=1"},
	}
	for _, tt := range tests {
		note, null := NullContent(tt.o)
		if !null || note != tt.want {
			t.Errorf("NullContent = %q, %v\nwant %q", note, null, tt.want)
		}
	}
	tc := objs["toolcall"].Clone()
	tc.Content = nil
	if note, _ := NullContent(tc); !strings.HasPrefix(note, "Content unavailable (the tool call stored no output): toolcall_ref id=toolu_01") {
		t.Errorf("toolcall note %q", note)
	}
}
