package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/internal/jsontext"
	"github.com/ctxstore/ctxstore/server/ccproxy"
	"github.com/ctxstore/ctxstore/store"
)

// The documents managed mode keeps (docs/claude-code.md, "Managed mode"):
// a conversation's decisions, each managed call, and the messages and
// heads (the request without its messages) the calls name by SHA-256, each
// stored once.
const (
	ccConvType    = "ccproxy_conversation"
	ccCallType    = "ccproxy_call"
	ccMessageType = "ccproxy_message"
	ccHeadType    = "ccproxy_head"
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

// managedCall is a recorded managed call as `claude-code calls` lists it.
type managedCall struct {
	N            int    `json:"n"`
	Session      string `json:"session_id"`
	Conversation string `json:"conversation"`
	Call         int    `json:"call"`
	Time         string `json:"time"`
	Collapsed    int    `json:"collapsed"`
	New          int    `json:"new_collapses"`
	Previews     int    `json:"previews"`
	Rebase       string `json:"rebase,omitempty"`
	Breakpoints  int    `json:"breakpoints"`
	SentBytes    int    `json:"sent_bytes"`
	AskedBytes   int    `json:"asked_bytes"`
	doc          store.Doc
}

// managedCalls returns session sid's recorded managed calls (sid or a
// unique prefix of it), in the order they were sent, numbered from 1.
func managedCalls(ctx context.Context, st store.Store, sid string) ([]managedCall, error) {
	docs, err := st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", ccCallType), store.Where("session_id", sid)}})
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		ids, err := store.Values(ctx, st, store.Query{Where: []store.Pred{store.Where("type", ccConvType)}}, "session_id", "", 0)
		if err != nil {
			return nil, err
		}
		var match []string
		for _, id := range ids {
			if strings.HasPrefix(id, sid) {
				match = append(match, id)
			}
		}
		switch len(match) {
		case 0:
			return nil, fmt.Errorf("no managed calls recorded for session %q (managed mode records them in the store run or proxy --managed used)", sid)
		case 1:
			return managedCalls(ctx, st, match[0])
		default:
			return nil, fmt.Errorf("session prefix %q names %d sessions: %s", sid, len(match), strings.Join(match, ", "))
		}
	}
	var out []managedCall
	for _, d := range docs {
		c := managedCall{doc: d, Session: str(d["session_id"]), Conversation: str(d["conversation"]), Call: num(d["call"]), Time: str(d["time"]),
			Collapsed: num(d["collapsed"]), New: num(d["new_collapses"]), Previews: num(d["previews"]), Rebase: str(d["rebase"]),
			Breakpoints: num(d["breakpoints"]), SentBytes: num(d["sent_bytes"]), AskedBytes: num(d["asked_bytes"])}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b managedCall) int {
		if c := strings.Compare(a.Time, b.Time); c != 0 {
			return c
		}
		if c := strings.Compare(a.Conversation, b.Conversation); c != 0 {
			return c
		}
		return a.Call - b.Call
	})
	for i := range out {
		out[i].N = i + 1
	}
	return out, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case int64:
		return int(x)
	case int:
		return x
	case json.Number:
		n, _ := x.Int64()
		return int(n)
	}
	return 0
}

// managedBody rebuilds the request a recorded managed call sent: its head
// with its messages, from the documents that hold them.
func managedBody(ctx context.Context, st store.Store, c managedCall) ([]byte, error) {
	blob := func(typ, h string) ([]byte, error) {
		d, err := st.Entity(ctx, typ+":"+h, store.Basis{})
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", typ, h, err)
		}
		return []byte(str(d["body"])), nil
	}
	head, err := blob(ccHeadType, str(c.doc["head"]))
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(head, &top); err != nil {
		return nil, err
	}
	hashes, _ := c.doc["messages"].([]any)
	msgs := make([]json.RawMessage, 0, len(hashes))
	for _, h := range hashes {
		b, err := blob(ccMessageType, str(h))
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, b)
	}
	list, err := json.Marshal(msgs)
	if err != nil {
		return nil, err
	}
	top["messages"] = list
	return jsontext.Marshal(top)
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
	calls, err := managedCalls(a.ctx, st, c.Session)
	if err != nil {
		return err
	}
	if c.Raw != 0 {
		if c.Raw < 1 || c.Raw > len(calls) {
			return usagef("--raw %d: the session has %d managed calls", c.Raw, len(calls))
		}
		b, err := managedBody(a.ctx, st, calls[c.Raw-1])
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", b)
		return err
	}
	if a.cli.JSON {
		return a.printJSON(calls)
	}
	fmt.Fprintf(a.stdout, "%4s  %-12s %4s  %-20s %9s %5s %8s %-8s %11s %11s\n", "n", "conversation", "call", "time", "collapsed", "new", "previews", "rebase", "sent", "asked")
	for _, x := range calls {
		fmt.Fprintf(a.stdout, "%4d  %-12s %4d  %-20s %9d %5d %8d %-8s %11d %11d\n", x.N, x.Conversation, x.Call, x.Time[:min(len(x.Time), 19)], x.Collapsed, x.New, x.Previews, x.Rebase, x.SentBytes, x.AskedBytes)
	}
	return nil
}
