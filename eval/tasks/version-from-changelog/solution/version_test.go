package release

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestVersionIsNewestRelease: Version is the first "## [x]" heading of
// CHANGELOG.md (the newest release; "Unreleased" does not count).
func TestVersionIsNewestRelease(t *testing.T) {
	f, err := os.Open("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "## [") {
			continue
		}
		v := strings.TrimPrefix(line, "## [")
		v = v[:strings.Index(v, "]")]
		if v == "Unreleased" {
			continue
		}
		if v != Version {
			t.Fatalf("Version is %q; the newest release in CHANGELOG.md is a different one", Version)
		}
		return
	}
	t.Fatal("no release in CHANGELOG.md")
}

func TestUserAgent(t *testing.T) {
	if got := UserAgent(); got != "release-client/"+Version {
		t.Errorf("UserAgent() = %q", got)
	}
}
