package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/integrations/claudecode/hooks"
	"github.com/ctxstore/ctxstore/server/ccproxy"
	"github.com/ctxstore/ctxstore/server/inspector"
	"github.com/ctxstore/ctxstore/store"
)

// The documents managed mode keeps: ccproxy's record types (read by
// ccproxy.ReadCalls and ccproxy.Bodies).
const (
	ccConvType    = ccproxy.ConversationType
	ccCallType    = ccproxy.CallType
	ccMessageType = ccproxy.MessageType
	ccHeadType    = ccproxy.HeadType
)

// proxyStore is the managed proxy's ccproxy.Store in a ctxstore store. The
// store is opened for each read and each batch of writes and closed after
// (Claude Code's hooks write to the same SQLite file from processes of
// their own); writes go through one goroutine, so that no request waits
// for them.
type proxyStore struct {
	a    *app
	loc  location
	url  string
	mu   sync.Mutex
	ops  []store.Op
	have map[string]bool // blobs written (or queued) by this process
	wake chan struct{}
	done chan struct{}
	stop chan struct{}
	told bool // a failure to write was said
}

// newProxyStore returns the store for storeURL (a --store value); Close
// writes what is queued.
func newProxyStore(a *app, storeURL string) (*proxyStore, error) {
	loc, err := parseLocation(storeURL)
	if err != nil {
		return nil, err
	}
	s := &proxyStore{a: a, loc: loc, url: storeURL, have: map[string]bool{}, wake: make(chan struct{}, 1), done: make(chan struct{}), stop: make(chan struct{})}
	go s.loop()
	return s, nil
}

// open opens the store for writing, its lock wait bounded.
func (s *proxyStore) open(ctx context.Context) (store.Store, error) {
	if s.loc.backend != backendSQLite || s.loc.path == ":memory:" {
		a := *s.a
		cli := *a.cli
		cli.Store = s.url
		a.cli = &cli
		return a.openStore(true)
	}
	if _, err := os.Stat(s.loc.path); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(s.loc.path), 0o755); err != nil {
			return nil, fmt.Errorf("creating the store directory: %w", err)
		}
	}
	return bitemporal.Open(ctx, s.loc.path, bitemporal.Options{BusyTimeout: 5 * time.Second})
}

func convDocID(sid, conv string) string { return "ccproxy-conversation:" + sid + ":" + conv }

// LoadConversation implements ccproxy.Store.
func (s *proxyStore) LoadConversation(ctx context.Context, sid, conv string) ([]byte, error) {
	s.mu.Lock()
	for i := len(s.ops) - 1; i >= 0; i-- { // queued, not yet written
		if id, _ := s.ops[i].Doc[store.IDKey].(string); id == convDocID(sid, conv) {
			st, _ := s.ops[i].Doc["state"].(string)
			s.mu.Unlock()
			return []byte(st), nil
		}
	}
	s.mu.Unlock()
	st, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	d, err := st.Entity(ctx, convDocID(sid, conv), store.Basis{})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	state, _ := d["state"].(string)
	return []byte(state), nil
}

// SaveConversation implements ccproxy.Store.
func (s *proxyStore) SaveConversation(_ context.Context, sid, conv string, state []byte) error {
	s.queue(store.Put(store.Doc{store.IDKey: convDocID(sid, conv), "type": ccConvType, "session_id": sid, "conversation": conv, "state": string(state)}))
	return nil
}

// RecordCall implements ccproxy.Store: the call names its head and its
// messages by SHA-256; each is written once.
func (s *proxyStore) RecordCall(_ context.Context, c ccproxy.Call) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(c.Body, &top); err != nil {
		return err
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(top["messages"], &msgs); err != nil {
		return err
	}
	delete(top, "messages")
	head, err := json.Marshal(top)
	if err != nil {
		return err
	}
	var ops []store.Op
	blob := func(typ string, b []byte) string {
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])
		id := typ + ":" + h
		s.mu.Lock()
		seen := s.have[id]
		s.have[id] = true
		s.mu.Unlock()
		if !seen {
			ops = append(ops, store.Put(store.Doc{store.IDKey: id, "type": typ, "body": string(b)}))
		}
		return h
	}
	var hashes []any
	for _, m := range msgs {
		var buf bytes.Buffer
		if err := json.Compact(&buf, m); err != nil {
			return err
		}
		hashes = append(hashes, blob(ccMessageType, buf.Bytes()))
	}
	var meta map[string]any
	b, _ := json.Marshal(c)
	json.Unmarshal(b, &meta)
	d := store.Doc{store.IDKey: fmt.Sprintf("ccproxy-call:%s:%s:%d", c.Session, c.Conversation, c.N), "type": ccCallType,
		"head": blob(ccHeadType, head), "messages": hashes, "sent_bytes": len(c.Body)}
	for k, v := range meta {
		d[k] = v
	}
	ops = append(ops, store.Put(d))
	s.queue(ops...)
	return nil
}

// maxQueued bounds the writes waiting: past it new ones are dropped (the
// store is unreachable; the proxy goes on).
const maxQueued = 10000

func (s *proxyStore) queue(ops ...store.Op) {
	s.mu.Lock()
	if len(s.ops)+len(ops) <= maxQueued {
		s.ops = append(s.ops, ops...)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop writes what is queued, a batch at a time, until Close.
func (s *proxyStore) loop() {
	defer close(s.done)
	for {
		select {
		case <-s.wake:
		case <-s.stop:
			s.flush()
			return
		}
		s.flush()
	}
}

// flush writes the queued operations in one transaction; on failure they
// are dropped and the next notice says so once.
func (s *proxyStore) flush() {
	s.mu.Lock()
	ops := s.ops
	s.ops = nil
	s.mu.Unlock()
	if len(ops) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := s.open(ctx)
	if err == nil {
		_, err = store.SubmitWait(ctx, st, ops)
		st.Close()
	}
	if err != nil {
		s.mu.Lock()
		for _, op := range ops { // a blob not written is written again next time
			if id, _ := op.Doc[store.IDKey].(string); id != "" {
				delete(s.have, id)
			}
		}
		told := s.told
		s.told = true
		s.mu.Unlock()
		if !told {
			fmt.Fprintf(s.a.stderr, "ctxstore claude-code proxy: recording managed calls in %s: %v (the session goes on; said once)\n", s.url, err)
		}
	}
}

// Close writes what is queued and stops.
func (s *proxyStore) Close() {
	close(s.stop)
	<-s.done
}

// ccCallsCmd is `ctxstore claude-code calls`.
type ccCallsCmd struct {
	Session string `arg:"" help:"The Claude Code session (its id or a unique prefix)."`
	Raw     int    `name:"raw" placeholder:"N" help:"Print call N's request as the model got it (JSON), instead of the list."`
}

// Run implements claude-code calls.
func (c *ccCallsCmd) Run(a *app) error {
	home, _ := os.UserHomeDir()
	u, _, err := ccStoreURL(a.cli.Store, home, true)
	if err != nil {
		return err
	}
	loc, err := parseLocation(u)
	if err != nil {
		return err
	}
	var st store.Store
	if loc.backend == backendSQLite {
		st, err = openSQLite(a.ctx, loc, false, false)
	} else {
		b := *a
		cli := *a.cli
		cli.Store = u
		b.cli = &cli
		st, err = b.openStore(false)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	sid, err := ccproxy.ResolveSession(a.ctx, st, c.Session)
	if err != nil {
		return err
	}
	calls, err := ccproxy.ReadCalls(a.ctx, st, sid)
	if err != nil {
		return err
	}
	if c.Raw != 0 {
		if c.Raw < 1 || c.Raw > len(calls) {
			return usagef("--raw %d: the session has %d managed calls", c.Raw, len(calls))
		}
		b, err := ccproxy.Bodies(a.ctx, st, calls[c.Raw-1:c.Raw])
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", b[0])
		return err
	}
	if a.cli.JSON {
		if calls == nil {
			calls = []ccproxy.RecordedCall{}
		}
		return a.printJSON(calls)
	}
	fmt.Fprintf(a.stdout, "%4s  %-12s %4s  %-20s %9s %5s %8s %-8s %11s %11s\n", "n", "conversation", "call", "time", "collapsed", "new", "previews", "rebase", "sent", "asked")
	for _, x := range calls {
		fmt.Fprintf(a.stdout, "%4d  %-12s %4d  %-20s %9d %5d %8d %-8s %11d %11d\n", x.N, x.Conversation, x.Call, x.Time.UTC().Format("2006-01-02T15:04:05"), x.Collapsed, x.New, x.Previews, x.Rebase, x.SentBytes, x.AskedBytes)
	}
	return nil
}

// loadManaged pairs a recorded session's calls (sid: its id, as the
// command's ref resolved it) with the managed calls the store holds of
// it; nil when none.
func loadManaged(a *app, st store.Store, sid string) (*inspector.Managed, error) {
	return inspector.LoadManaged(a.ctx, st, sid)
}

// callWithManaged is a recorded call as `calls --json` lists it for a
// session run through managed mode: the call and, when one sent the model
// its managed form, that managed call.
type callWithManaged struct {
	inspect.Call
	Managed *ccproxy.RecordedCall `json:"managed,omitempty"`
}

func withManaged(cs []inspect.Call, m *inspector.Managed) []callWithManaged {
	out := make([]callWithManaged, len(cs))
	for i, c := range cs {
		out[i].Call = c
		if mc, ok := m.For(c.N); ok {
			out[i].Managed = &mc.Call
		}
	}
	return out
}

// sentShare is what the model got as a share of what Claude Code asked to
// send, in bytes.
func sentShare(c ccproxy.RecordedCall) string {
	if c.AskedBytes <= 0 {
		return "-"
	}
	return pct(float64(c.SentBytes) / float64(c.AskedBytes))
}

// managedShared is, for `call N --diff M`, how many messages the two
// calls' managed requests share: the prefix the later one could read from
// the cache the earlier one wrote, as the model got them.
type managedShared struct {
	From         int    `json:"from"`
	To           int    `json:"to"`
	FromManaged  int    `json:"from_managed"`
	ToManaged    int    `json:"to_managed"`
	Shared       int    `json:"shared_messages"`
	Messages     int    `json:"messages"`
	Conversation string `json:"conversation"`
	Same         bool   `json:"same_conversation"`
}

// sharedOf compares recorded calls from and to as the model got them; nil
// when either has no managed form.
func sharedOf(m *inspector.Managed, from, to int) *managedShared {
	a, ok1 := m.For(from)
	b, ok2 := m.For(to)
	if !ok1 || !ok2 {
		return nil
	}
	return &managedShared{From: from, To: to, FromManaged: a.Call.N, ToManaged: b.Call.N, Shared: ccproxy.SharedMessages(a.Call, b.Call),
		Messages: len(b.Call.Messages()), Conversation: b.Call.Conversation, Same: a.Call.Conversation == b.Call.Conversation}
}

func (s *managedShared) String() string {
	if !s.Same {
		return fmt.Sprintf("as the model got them (managed calls %d and %d): different conversations", s.FromManaged, s.ToManaged)
	}
	return fmt.Sprintf("as the model got them (managed calls %d and %d of conversation %s): the first %d of %d messages alike",
		s.FromManaged, s.ToManaged, s.Conversation, s.Shared, s.Messages)
}

// printManagedCall says what managed mode sent the model for a recorded
// call, and each tool result it got otherwise than Claude Code asked.
func printManagedCall(w io.Writer, mc *inspector.ManagedCall, full bool) {
	c := mc.Call
	rebase := ""
	if c.Rebase != "" {
		rebase = ", rebase (" + c.Rebase + ")"
	}
	fmt.Fprintf(w, "managed: managed call %d (conversation %s, call %d): the model got %d bytes of the %d Claude Code asked to send (%s); %d outputs shown collapsed (%d new), %d previews, %d breakpoints%s\n",
		c.N, c.Conversation, c.Call, c.SentBytes, c.AskedBytes, sentShare(c), c.Collapsed, c.New, c.Previews, c.Breakpoints, rebase)
	fmt.Fprintln(w, "         (--raw prints what the model got, --raw --asked what Claude Code asked to send)")
	if len(mc.Changes) == 0 {
		fmt.Fprintln(w, "         every tool result as Claude Code asked")
		return
	}
	fmt.Fprintf(w, "         %d tool results the model got otherwise:\n", len(mc.Changes))
	for i, ch := range mc.Changes {
		if !full && i == 10 {
			fmt.Fprintf(w, "         … %d more (--full)\n", len(mc.Changes)-10)
			break
		}
		asked := fmt.Sprintf("%d chars", ch.Asked)
		if ch.Missing {
			asked = "not in the recorded request"
		}
		fmt.Fprintf(w, "         %s: %s asked, %d sent: %s\n", ch.ToolUseID, asked, ch.Sent, ch.Text)
	}
}

// ccPurge is what `claude-code uninstall --purge` removes beside the
// settings entries: managed mode's documents (evicted: no version stays)
// from the stores Claude Code's proxy and hooks use, and the spill and
// hook state directories, whole. The recorded sessions stay.
type ccPurge struct {
	Stores []purgeStore `json:"stores"`
	Dirs   []string     `json:"dirs"`
	Kept   []string     `json:"kept"` // the stores, which keep the recorded sessions
}

// purgeStore is a store's managed-mode documents, counted by type.
type purgeStore struct {
	URL       string         `json:"store"`
	Documents map[string]int `json:"documents"`
	ids       []string
}

// purgeStores are the stores purged: --store, else ~/.ctxstore/store.db
// (run's and the proxy's default) and the scope's (install's default).
func purgeStores(a *app, home, dir string, user bool) ([]string, error) {
	var urls []string
	if a.cli.Store != "" {
		u, _, err := ccStoreURL(a.cli.Store, dir, user)
		if err != nil {
			return nil, err
		}
		return []string{u}, nil
	}
	for _, u := range []string{"sqlite:" + filepath.Join(home, ".ctxstore", "store.db"), "sqlite:" + filepath.Join(dir, defaultStorePath)} {
		if user {
			u = "sqlite:" + filepath.Join(home, ".ctxstore", "store.db")
		}
		if !slices.Contains(urls, u) {
			urls = append(urls, u)
		}
	}
	return urls, nil
}

// openPurgeStore opens a store to purge; nil when it is a SQLite file that
// does not exist (nothing to purge, and nothing is created).
func openPurgeStore(a *app, u string, write bool) (store.Store, error) {
	loc, err := parseLocation(u)
	if err != nil {
		return nil, err
	}
	if loc.backend == backendSQLite {
		if _, err := os.Stat(loc.path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return bitemporal.Open(a.ctx, loc.path, bitemporal.Options{BusyTimeout: 10 * time.Second})
	}
	b := *a
	cli := *a.cli
	cli.Store = u
	b.cli = &cli
	return b.openStore(write)
}

// planPurge finds what --purge removes for the scope (dir, user).
func planPurge(a *app, dir string, user bool) (*ccPurge, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, err
	}
	urls, err := purgeStores(a, home, dir, user)
	if err != nil {
		return nil, err
	}
	p := &ccPurge{Stores: []purgeStore{}, Dirs: []string{}, Kept: []string{}}
	for _, u := range urls {
		st, err := openPurgeStore(a, u, false)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", u, err)
		}
		if st == nil {
			continue
		}
		ps := purgeStore{URL: u, Documents: map[string]int{}}
		for _, typ := range ccproxy.RecordTypes {
			docs, err := st.Query(a.ctx, store.Query{Where: []store.Pred{store.Where("type", typ)}})
			if err != nil {
				st.Close()
				return nil, fmt.Errorf("%s: %w", u, err)
			}
			for _, d := range docs {
				if id, _ := d[store.IDKey].(string); id != "" {
					ps.ids = append(ps.ids, id)
					ps.Documents[typ]++
				}
			}
		}
		st.Close()
		p.Kept = append(p.Kept, u)
		if len(ps.ids) > 0 {
			p.Stores = append(p.Stores, ps)
		}
	}
	dirs := []string{filepath.Join(home, ".ctxstore", "spill"), filepath.Join(dir, ".ctxstore", "spill")}
	if d, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(d, "ctxstore", "claude-code"))
	}
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && !slices.Contains(p.Dirs, d) {
			p.Dirs = append(p.Dirs, d)
		}
	}
	return p, nil
}

// apply evicts the documents and removes the directories.
func (p *ccPurge) apply(a *app) error {
	for _, ps := range p.Stores {
		st, err := openPurgeStore(a, ps.URL, true)
		if err != nil {
			return fmt.Errorf("%s: %w", ps.URL, err)
		}
		if st == nil {
			continue
		}
		for ids := range slices.Chunk(ps.ids, 500) {
			ops := make([]store.Op, len(ids))
			for i, id := range ids {
				ops[i] = store.Evict(id)
			}
			if _, err := store.SubmitWait(a.ctx, st, ops); err != nil {
				st.Close()
				return fmt.Errorf("%s: evicting managed mode's documents: %w", ps.URL, err)
			}
		}
		st.Close()
	}
	for _, d := range p.Dirs {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	return nil
}

// printPurge prints uninstall --purge's settings changes and what it
// removed (or, dry, would remove).
func (a *app) printPurge(changes []hooks.Change, p *ccPurge, dry bool) error {
	rows := changeRows(changes, dry)
	if a.cli.JSON {
		if rows == nil {
			rows = []changeRow{}
		}
		return a.printJSON(map[string]any{"dry_run": dry, "files": rows, "purge": p})
	}
	a.printRows(rows, dry)
	w, verb, rm := a.stdout, "evicted", "removed"
	if dry {
		w, verb, rm = a.stderr, "ctxstore: would evict", "ctxstore: would remove"
	}
	for _, ps := range p.Stores {
		n := 0
		for _, k := range ps.Documents {
			n += k
		}
		fmt.Fprintf(w, "%s %d managed-mode documents (%d calls, %d conversations) from %s\n", verb, n, ps.Documents[ccCallType], ps.Documents[ccConvType], ps.URL)
	}
	for _, d := range p.Dirs {
		fmt.Fprintf(w, "%s %s\n", rm, d)
	}
	for _, u := range p.Kept {
		fmt.Fprintf(a.stderr, "ctxstore: the recorded sessions stay in %s\n", u)
	}
	return nil
}
