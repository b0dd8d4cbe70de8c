package inspector_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// chromium returns the path of Debian's chromium, installing it (with
// chromium-driver) through scripts/ensure-chromium.sh when it is missing.
// When it cannot be had the test fails under CI=true and is skipped
// otherwise, saying why. Under -short it installs and starts nothing and
// skips: `make test-short` starts no browser.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the browser tests install and start chromium")
	}
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "ensure-chromium.sh"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	path := strings.TrimSpace(string(out))
	if err != nil || path == "" {
		msg := fmt.Sprintf("no headless chromium for the browser tests (scripts/ensure-chromium.sh: %v): %s", err, strings.TrimSpace(stderr.String()))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// artifacts is where screenshots go: $CTXSTORE_ARTIFACTS/<test>, or the
// test's temporary directory.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if d := os.Getenv("CTXSTORE_ARTIFACTS"); d != "" {
		dir = filepath.Join(d, t.Name())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser starts a headless chromium with a fresh profile and returns a
// tab's context.
func browser(t *testing.T, exe string) context.Context {
	t.Helper()
	// Not t.TempDir: chromium's helper processes can still write to the
	// profile for a moment after the browser exits, and TempDir's cleanup
	// fails the test on a directory that is not empty yet. It is removed
	// below, again until it is gone.
	profile, err := os.MkdirTemp("", "ctxstore-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelT()
		cancelB()
		cancelA()
		var err error
		for range 50 {
			if err = os.RemoveAll(profile); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("leaving the chromium profile %s: %v", profile, err)
	})
	if err := chromedp.Run(ctx); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// shot saves a full-page screenshot as a test artifact.
func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 45*time.Second) // a step that waits for what never comes fails in time
	defer cancel()
	if err := chromedp.Run(c, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// The inspector in a real headless browser: log in with a token, open the
// sessions, click a session, a call, diff it against the previous call,
// open an object's history; each page is checked for what it shows and
// saved as a screenshot. A token limited to one session sees that one
// only.
func TestBrowser(t *testing.T) {
	exe := chromium(t)
	s := newSite(t)
	dir := artifacts(t)
	ctx := browser(t, exe)
	sid := s.sids[0]

	var text string
	var n int
	run(t, ctx, "login page", chromedp.Navigate(s.url+"/inspect/"), chromedp.WaitVisible("#login-form", chromedp.ByQuery))
	shot(t, ctx, dir, "0-login")
	run(t, ctx, "log in",
		chromedp.SendKeys("#token-input", tokenAll, chromedp.ByQuery),
		chromedp.Click("#login-button", chromedp.ByQuery),
		chromedp.WaitVisible("#sessions", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("a.session-link").length`, &n),
		chromedp.Text("#sessions", &text, chromedp.ByQuery))
	if n != 3 || !strings.Contains(text, "I want you to help me QA our Attio MCP tools") || !strings.Contains(text, "Fix the failing test") {
		t.Fatalf("sessions page: %d links\n%s", n, text)
	}
	shot(t, ctx, dir, "1-sessions")

	// session -> its timeline and calls
	run(t, ctx, "open the session",
		chromedp.Click(`a.session-link[href$="`+sid+`"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#timeline", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#timeline g.bar").length`, &n))
	if n != 30 {
		t.Fatalf("timeline: %d bars, want 30", n)
	}
	run(t, ctx, "read the session", chromedp.Text("#session-facts", &text, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#calls tr.call-row").length`, &n))
	if n != 30 || !strings.Contains(text, "claude-code") || !strings.Contains(text, "30 (") {
		t.Fatalf("session page: %d rows\n%s", n, text)
	}
	run(t, ctx, "commit graph", chromedp.Evaluate(`document.querySelectorAll("#commit-graph circle.commit").length`, &n))
	if n != 4 {
		t.Fatalf("commit graph: %d nodes, want 4", n)
	}
	var lost string
	run(t, ctx, "causes", chromedp.Text("#lost", &lost, chromedp.ByQuery))
	if !strings.Contains(lost, "first") {
		t.Fatalf("cache breaks by cause:\n%s", lost)
	}
	shot(t, ctx, dir, "2-session")

	// the session's paging page, through its link, and back
	run(t, ctx, "paging",
		chromedp.Click("#paging-link", chromedp.ByQuery),
		chromedp.WaitVisible("#paging-summary", chromedp.ByQuery),
		chromedp.Text("#paging-summary", &text, chromedp.ByQuery))
	if !strings.Contains(text, "outputs shown as a preview") || !strings.Contains(text, "fault rate") {
		t.Fatalf("paging page:\n%s", text)
	}
	shot(t, ctx, dir, "2b-paging")
	run(t, ctx, "back to the session", chromedp.Navigate(s.url+"/inspect/s/"+sid), chromedp.WaitVisible("#timeline", chromedp.ByQuery))

	// call 12 -> its context and attribution
	run(t, ctx, "open call 12",
		chromedp.Click(`#calls a.call-link[href$="/c/12"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#blocks", chromedp.ByQuery),
		chromedp.Text("#call-title", &text, chromedp.ByQuery))
	if text != "Call 12" {
		t.Fatalf("call page title %q", text)
	}
	var cause, blocks string
	run(t, ctx, "read call 12", chromedp.Text("#break-cause", &cause, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#blocks li.block").length`, &n),
		chromedp.Text("#blocks", &blocks, chromedp.ByQuery))
	if cause == "" || n < 10 || !strings.Contains(blocks, "system prompt") || !strings.Contains(blocks, "tool result · toolcall") {
		t.Fatalf("call 12: cause %q, %d blocks\n%.2000s", cause, n, blocks)
	}
	shot(t, ctx, dir, "3-call")

	// diff against call 11, through the form
	run(t, ctx, "diff with call 11",
		chromedp.SetValue("#diff-input", "11", chromedp.ByQuery),
		chromedp.Click("#diff-button", chromedp.ByQuery),
		chromedp.WaitVisible("#diff-summary", chromedp.ByQuery),
		chromedp.Text("#diff-summary", &text, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#diff-entries li.op-added").length`, &n))
	if !strings.Contains(text, "blocks in common") || n == 0 {
		t.Fatalf("diff: %d added\n%s", n, text)
	}
	var loc string
	run(t, ctx, "diff url", chromedp.Location(&loc))
	if !strings.HasSuffix(loc, "/c/12/diff/11") {
		t.Fatalf("diff at %s", loc)
	}
	shot(t, ctx, dir, "4-diff")

	// back to the call, then an object's history
	run(t, ctx, "object history",
		chromedp.Navigate(s.url+"/inspect/s/live-session/c/2"),
		chromedp.WaitVisible("#blocks", chromedp.ByQuery),
		chromedp.Click(`li.kind-content a.obj`, chromedp.ByQuery),
		chromedp.WaitVisible("#versions", chromedp.ByQuery),
		chromedp.Text("#versions", &text, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#axes g.version").length`, &n))
	if n < 1 || !strings.Contains(text, "live-session") || !strings.Contains(text, "as content") {
		t.Fatalf("object page: %d versions drawn\n%s", n, text)
	}
	shot(t, ctx, dir, "5-object")

	// pages of a session
	run(t, ctx, "a page of calls",
		chromedp.Navigate(s.url+"/inspect/s/"+sid+"?from=11&limit=10"),
		chromedp.WaitVisible("#calls", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#calls tr.call-row").length`, &n),
		chromedp.Text("#calls tr.call-row td", &text, chromedp.ByQuery))
	if n != 10 || text != "11" {
		t.Fatalf("page from 11: %d rows, first %q", n, text)
	}
	run(t, ctx, "next page", chromedp.Click("#next-page", chromedp.ByQuery), chromedp.WaitVisible("#calls", chromedp.ByQuery),
		chromedp.Text("#calls tr.call-row td", &text, chromedp.ByQuery))
	if text != "21" {
		t.Fatalf("next page starts at %q", text)
	}

	// a token limited to one session
	run(t, ctx, "log in with the limited token",
		network.ClearBrowserCookies(),
		chromedp.Navigate(s.url+"/inspect/login"),
		chromedp.WaitVisible("#login-form", chromedp.ByQuery),
		chromedp.SendKeys("#token-input", tokenLimited, chromedp.ByQuery),
		chromedp.Click("#login-button", chromedp.ByQuery),
		chromedp.WaitVisible("#sessions", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("a.session-link").length`, &n))
	if n != 1 {
		t.Fatalf("limited token sees %d sessions", n)
	}
	run(t, ctx, "another session",
		chromedp.Navigate(s.url+"/inspect/s/"+s.sids[1]+"/c/3"),
		chromedp.WaitVisible("#error-message", chromedp.ByQuery),
		chromedp.Text("#error-message", &text, chromedp.ByQuery))
	if !strings.Contains(text, "not found") {
		t.Fatalf("limited token on another session: %q", text)
	}
	shot(t, ctx, dir, "6-limited")
}
