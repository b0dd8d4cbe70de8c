package inspector_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/server/inspector"
)

func TestMain(m *testing.M) { storetestenv.Main(m) }

// get fetches path with a bearer token ("" for none) without following
// redirects.
func get(t *testing.T, s *site, token, path string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.url+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

// The pages over HTTP: the token rules of the API (none: the login form;
// a limited token: its sessions only, every other one "not found"),
// read-only, no script or outside resource allowed, the raw bytes exactly
// the ones sent, and a live session shown like a replayed one.
func TestPagesAndTrust(t *testing.T) {
	s := newSite(t)
	code, _, body := get(t, s, "", "/inspect/")
	if code != 401 || !strings.Contains(body, `id="login-form"`) {
		t.Fatalf("no token: %d\n%s", code, body)
	}
	code, _, _ = get(t, s, "wrong-token-0123456789", "/inspect/")
	if code != 401 {
		t.Fatalf("wrong token: %d", code)
	}
	code, hd, body := get(t, s, tokenAll, "/inspect/")
	if code != 200 || strings.Count(body, `class="session-link"`) != 3 || !strings.Contains(body, "I want you to help me QA our Attio MCP tools") {
		t.Fatalf("sessions: %d\n%s", code, body)
	}
	csp := hd.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || strings.Contains(body, "<script") || strings.Contains(body, "http://") && !strings.Contains(body, "http://www.w3.org") {
		t.Fatalf("CSP %q or an outside resource in the page", csp)
	}
	code, _, body = get(t, s, tokenLimited, "/inspect/")
	if code != 200 || strings.Count(body, `class="session-link"`) != 1 || !strings.Contains(body, s.sids[0]) {
		t.Fatalf("limited sessions: %d\n%s", code, body)
	}
	for _, p := range []string{"/inspect/s/" + s.sids[1], "/inspect/s/" + s.sids[1] + "/c/1", "/inspect/s/" + s.sids[1] + "/c/2/diff/1",
		"/inspect/s/" + s.sids[1] + "/c/1/raw", "/inspect/o/chat:" + s.sids[1], "/inspect/s/live-session", "/inspect/s/" + s.sids[1] + "/paging"} {
		if code, _, body := get(t, s, tokenLimited, p); code != 404 || strings.Contains(body, "<pre>") {
			t.Fatalf("limited token, %s: %d", p, code)
		}
	}
	if code, _, _ := get(t, s, tokenLimited, "/inspect/s/"+s.sids[0]+"/c/3"); code != 200 {
		t.Fatalf("limited token, own call: %d", code)
	}

	// context commits: the branch in a lane of its own, a fork's parent in
	// another session by id only
	code, _, body = get(t, s, tokenAll, "/inspect/s/"+s.sids[0])
	if code != 200 || strings.Count(body, `class="commit-row`) != 4 || strings.Count(body, `class="node commit branch"`) != 1 ||
		!strings.Contains(body, `data-lane="1"`) || !strings.Contains(body, "another way") {
		t.Fatalf("commit graph of %s:\n%s", s.sids[0], body)
	}
	code, _, body = get(t, s, tokenAll, "/inspect/s/"+s.sids[1])
	if code != 200 || strings.Count(body, `class="commit-row external"`) != 1 || strings.Contains(body, "first turn") || !strings.Contains(body, "forked") {
		t.Fatalf("commit graph of %s:\n%s", s.sids[1], body)
	}
	code, _, body = get(t, s, tokenAll, "/inspect/s/live-session")
	if code != 200 || !strings.Contains(body, `id="no-commits"`) {
		t.Fatalf("live session without commits: %d", code)
	}

	// read-only
	req, _ := http.NewRequest("DELETE", s.url+"/inspect/s/"+s.sids[0], nil)
	req.Header.Set("Authorization", "Bearer "+tokenAll)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 405 {
		t.Fatalf("DELETE: %d", res.StatusCode)
	}

	// raw bytes
	code, _, raw := get(t, s, tokenAll, "/inspect/s/"+s.sids[1]+"/c/9/raw")
	rec, err := assemble.ReadCommit(t.Context(), s.st, s.sids[1], 9)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(raw))
	if code != 200 || hex.EncodeToString(sum[:]) != rec.BytesSHA256 {
		t.Fatalf("raw: %d, %d bytes, not the ones recorded", code, len(raw))
	}

	// a live session: its calls, the read file's content labelled, and the
	// file's history naming the calls that showed it
	code, _, body = get(t, s, tokenAll, "/inspect/s/live-session")
	if code != 200 || strings.Count(body, `class="call-row`) != 3 || !strings.Contains(body, "Fix the failing test in main.go") {
		t.Fatalf("live session: %d\n%s", code, body)
	}
	code, _, body = get(t, s, tokenAll, "/inspect/s/live-session/c/2")
	if code != 200 || !strings.Contains(body, "content · file "+s.live.Dir+"/main.go @") || !strings.Contains(body, `id="break-cause">none<`) {
		t.Fatalf("live call 2: %d\n%s", code, body)
	}
	j := strings.Index(body, "content · file "+s.live.Dir+"/main.go @")
	i := strings.Index(body[max(j, 0):], `href="/inspect/o/`)
	if j < 0 || i < 0 {
		t.Fatal("no object link on main.go's content block")
	}
	link := body[j+i+len(`href="`):]
	link = strings.ReplaceAll(link[:strings.IndexByte(link, '"')], "&amp;", "&")
	code, _, body = get(t, s, tokenAll, link)
	if code != 200 || !strings.Contains(body, `id="versions"`) || !strings.Contains(body, "calls 1</a>–<a") ||
		strings.Count(body, `class="version-row"`) != 2 || !strings.Contains(body, "/main.go</h1>") {
		t.Fatalf("object page %s: %d\n%s", link, code, body)
	}

	// bad arguments and unknown pages
	for p, want := range map[string]int{"/inspect/s/" + s.sids[0] + "/c/0": 400, "/inspect/s/" + s.sids[0] + "/c/31": 404,
		"/inspect/s/nope": 404, "/inspect/nothing": 404, "/inspect/s/" + s.sids[0] + "?from=x": 400} {
		if code, _, _ := get(t, s, tokenAll, p); code != want {
			t.Errorf("%s: %d, want %d", p, code, want)
		}
	}

	// the login form sets a cookie that works in place of the header
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = c.PostForm(s.url+"/inspect/login", url.Values{"token": {tokenLimited}, "next": {"https://evil.example/"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	ck := res.Cookies()
	if res.StatusCode != 303 || res.Header.Get("Location") != "/inspect/" || len(ck) != 1 || !ck[0].HttpOnly || ck[0].Name != inspector.CookieName {
		t.Fatalf("login: %d %q %+v", res.StatusCode, res.Header.Get("Location"), ck)
	}
	req, _ = http.NewRequest("GET", s.url+"/inspect/", nil)
	req.AddCookie(ck[0])
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || strings.Count(string(b), `class="session-link"`) != 1 {
		t.Fatalf("cookie: %d", res.StatusCode)
	}
	res, err = c.PostForm(s.url+"/inspect/login", url.Values{"token": {"not-a-token-0123456789"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 || len(res.Cookies()) != 0 {
		t.Fatalf("login with a bad token: %d", res.StatusCode)
	}
}

// A 2,000-call session: a page of its calls reads the records of that page
// (and the one before it) without their items, and never rebuilds a
// context.
func TestCallsPageOfLongSession(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 300
	}
	se := storetestenv.New(t, storetestenv.SQLite)
	l := inspecttest.NewLive(t, se.Store, "long")
	for i := 0; i < n; i++ {
		if i%10 == 0 {
			l.Turn("next step")
		}
		l.Bash("step", "done\n")
		l.Call(5e9)
	}
	cs := &countingStore{Store: se.Store}
	h, err := inspector.New(inspector.Options{Store: cs, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptestGet(h, "/inspect/s/long?from="+itoa(n-99))
	if rec.code != 200 || strings.Count(rec.body, `class="call-row`) != 100 || !strings.Contains(rec.body, `id="prev-page"`) {
		t.Fatalf("page: %d, %d rows", rec.code, strings.Count(rec.body, `class="call-row`))
	}
	if cs.itemReads > 0 || cs.commitEntities > 1 {
		t.Fatalf("the calls page read %d documents' items and %d call records whole", cs.itemReads, cs.commitEntities)
	}
	if cs.maxRows > n+1 {
		t.Fatalf("a query returned %d rows", cs.maxRows)
	}
}

// TestPagingPage: the session page links to its paging page, which counts
// a live session's previews and lists the activate that read one back.
func TestPagingPage(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	l := inspecttest.NewLive(t, se.Store, "paged")
	l.Turn("build twice")
	l.Bash("make", strings.Repeat("a line of the build log that goes on\n", 800))
	l.Call(5e9)
	l.Bash("make check", strings.Repeat("a line of the check log that goes on\n", 800))
	l.Call(5e9)
	l.Activate("toolu_paged_0001")
	l.Call(5e9)
	h, err := inspector.New(inspector.Options{Store: se.Store})
	if err != nil {
		t.Fatal(err)
	}
	if rec := httptestGet(h, "/inspect/s/paged"); rec.code != 200 || !strings.Contains(rec.body, `href="/inspect/s/paged/paging"`) {
		t.Fatalf("session page: %d, no link to the paging page", rec.code)
	}
	rec := httptestGet(h, "/inspect/s/paged/paging")
	if rec.code != 200 || !strings.Contains(rec.body, `<strong id="fault-rate">50.0%</strong>`) ||
		!strings.Contains(rec.body, "2 outputs shown as a preview, 1 read back whole") || strings.Count(rec.body, "<td>activate</td>") != 1 ||
		!strings.Contains(rec.body, `/inspect/o/toolu_paged_0001?session=paged"`) ||
		!strings.Contains(rec.body, `<p id="preview-doublings">Read back more often than 5%, this session's previews now start at 1 doubling of that size.</p>`) {
		t.Fatalf("paging page: %d\n%s", rec.code, rec.body)
	}
	if rec := httptestGet(h, "/inspect/s/no-such/paging"); rec.code != 404 {
		t.Fatalf("paging page of an unknown session: %d", rec.code)
	}
}
