package assemble

import "strings"

// Paths is how a session's file paths are shown to the model (rendering
// version 4): a file under Root as its path relative to Root, as the
// model itself names files it works on ("src/main.go", not
// "/home/me/project/src/main.go"); a file under Mount (and not under Root)
// as its path with Mount taken off, so "/" + the rest; any other path as
// it is. Root is the harness's working directory as the store's file
// objects name it; Mount is where a replay mirrors the recorded machine's
// files (ingest.Mirror), empty for a live session, whose file objects
// carry the machine's own paths.
//
// The session's first commit records them ("paths"), so every past context
// rebuilds with the paths it was sent with, whatever the options of a
// later process.
type Paths struct {
	Root  string `json:"root,omitempty"`
	Mount string `json:"mount,omitempty"`
}

// Display returns path as the model is shown it.
func (p Paths) Display(path string) string {
	if rest, ok := under(path, p.Root); ok {
		return rest
	}
	if rest, ok := under(path, p.Mount); ok {
		return "/" + rest
	}
	return path
}

// under reports whether path lies strictly below dir (a "/"-separated
// absolute directory) and returns the part after dir's separator.
func under(path, dir string) (string, bool) {
	dir = strings.TrimRight(dir, "/")
	if dir == "" || !strings.HasPrefix(path, dir+"/") {
		return "", false
	}
	rest := path[len(dir)+1:]
	return rest, rest != ""
}

func (p Paths) zero() bool { return p.Root == "" && p.Mount == "" }
