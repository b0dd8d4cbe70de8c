package httpapi

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/sweagent"
	"github.com/ctxstore/ctxstore/internal/jsonlimit"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/objects/markdown"
	"github.com/ctxstore/ctxstore/server/mcp"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// docSize writes a byte count as docs/security.md does: "64 MiB", "1 GiB".
func docSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// docCount writes a count with thousands separated by commas.
func docCount(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// The limits table of docs/security.md says what the code enforces: each
// row names the limits of its input path with the values the code has.
func TestSecurityLimitsTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## Limits on every input path")
	if !ok {
		t.Fatal("docs/security.md has no limits section")
	}
	rest, _, _ = strings.Cut(rest, "\n## ")
	rows := map[string]string{}
	for _, l := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(l, "| ") || strings.HasPrefix(l, "|---") {
			continue
		}
		cells := strings.Split(l, " | ")
		rows[strings.TrimPrefix(cells[0], "| ")] = l
	}
	o := newEnv(t, nil).srv.o // the defaults
	if checkSessionID(strings.Repeat("s", maxSessionID)) != nil || checkSessionID(strings.Repeat("s", maxSessionID+1)) == nil {
		t.Errorf("session ids are not 1-%d bytes", maxSessionID)
	}
	for _, c := range []struct{ row, want string }{
		{"every HTTP request", "body " + docSize(o.MaxBody) + " (`Options.MaxBody`)"},
		{"every HTTP request", fmt.Sprintf("%d levels", jsonlimit.MaxDepth)},
		{"every HTTP request", "budget " + docSize(o.BodyBudget) + " (`Options.BodyBudget`)"},
		{"every HTTP request", "within " + fmt.Sprint(o.ReadTimeout.Round(time.Minute).Minutes()) + " min"},
		{"every HTTP request", fmt.Sprintf("headers within %d s", int(readHeaderTimeout.Seconds()))},
		{"every HTTP request", "closed after " + fmt.Sprint(o.IdleTimeout.Round(time.Minute).Minutes()) + " min (`IdleTimeout`)"},
		{"ids", fmt.Sprintf("session ids 1-%d of", maxSessionID)},
		{"context request (`POST …/context`)", docSize(int64(o.Limits.MaxMessageBytes)) + " per message"},
		{"context request (`POST …/context`)", docCount(o.Limits.MaxMessages) + " messages in the log"},
		{"context request (`POST …/context`)", docCount(o.Limits.MaxNewMessages) + " new ones per request"},
		{"bundle import over HTTP", "decompresses to at most " + docSize(o.MaxImport)},
		{"version log and bundle files (`import`, `session import`)", docSize(versionlog.MaxLineBytes) + " per line"},
		{"transcripts (`replay`, the harness readers)", docSize(harness.MaxLineBytes) + " per line"},
		{"session import (`import PATH`, `POST /v1/import`)", "a line over " + docSize(harness.MaxLineBytes)},
		{"session import (`import PATH`, `POST /v1/import`)", "a `.traj` document at most " + docSize(sweagent.MaxBytes)},
		{"session import (`import PATH`, `POST /v1/import`)", "at most " + docCount(o.MaxImportLines) + " lines (`Options.MaxImportLines`"},
		{"files indexed", "content stored up to " + docSize(files.DefaultMaxTextBytes)},
		{"files indexed", "first " + docCount(tools.MaxCandidates) + " distinct names (`tools.MaxCandidates`)"},
		{"MCP server (`ctxstore mcp`, stdio and `--http`)", fmt.Sprintf("at most %d messages (`mcp.MaxBatch`)", mcp.MaxBatch)},
		{"documents (`put`, `put --lines`)", fmt.Sprintf("at most %d bytes", objects.MaxIDLen)},
		{"ids", fmt.Sprintf("object ids at most %d bytes", objects.MaxIDLen)},
		{"Markdown notes", fmt.Sprintf("nested %d deep", markdown.MaxQuoteDepth)},
	} {
		row, ok := rows[c.row]
		if !ok {
			t.Errorf("docs/security.md's limits table has no row %q", c.row)
			continue
		}
		if !strings.Contains(row, c.want) {
			t.Errorf("docs/security.md's row %q does not say %q (what the code enforces):\n%s", c.row, c.want, row)
		}
	}
}
