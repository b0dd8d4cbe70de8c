package assemble

// stream is the session's items and their rendering: the head (system
// prompt and tools), then each item's bytes in order. push appends an
// item, rendered once; a rebase truncates the stream at an item and
// pushes the rewritten tail; the head changes only when a lean head
// switches (manage). Nothing else changes bytes, so between rebases each
// rendering extends the one before.
//
// offs[i] is the absolute byte offset of items[i]; buf holds the
// rendering from byte bufBase on (the bytes before were released with
// the frozen prefix); tokens is headTok plus every item's tokens, metaTok
// the part metadata items hold, and stale the tokens of stale content
// and collapsible inputs still rendered.
type stream struct {
	style *style    // how the session's items render
	tok   Tokenizer // what tokens count

	head    []byte // the system prompt and tools as rendered
	headTok int

	items   []*item // the stream (LayoutStream) or every event (LayoutLiteral)
	offs    []int   // byte offset of each item in the rendering (LayoutStream)
	buf     []byte  // rendered bytes (LayoutStream), from byte bufBase on
	bufBase int     // bytes of the rendering released before buf (Options.Release)
	tokens  int     // tokens of the rendering
	metaTok int     // tokens of the metadata items
	stale   int     // stale tokens rendered
	// closed: the last message was the end of a call's context, after
	// which the harness sent messages of its own (rendering 6): the next
	// fragment that would join it opens a message instead (item.opens).
	closed bool
	// evicted: items from evictedAt on render a newer version of their
	// object than the one their commit names, which a context edit evicted
	// (Resume, Reload); the next call rebases from evictedAt.
	evicted   bool
	evictedAt int
}

// push renders it and appends it to the stream.
func (s *stream) push(it *item) {
	if it.f == nil {
		it.style = s.style
		it.render()
	}
	var prev *frag
	if n := len(s.items); n > 0 {
		prev = s.items[n-1].f
	}
	if s.closed && !it.f.silent {
		s.closed = false
		if it.f.joins(prev) {
			f := *it.f
			f.opens, it.opens = true, true
			it.f = &f
		}
	}
	if it.f.silent {
		// Its role depends on what precedes it, which a rebase changes;
		// calls assembled before keep the fragment they had.
		f := *it.f
		it.f = &f
		it.f.follow(prev)
	}
	start := s.bufBase + len(s.buf)
	s.buf = appendFrag(s.buf, prev, it.f)
	it.tokens = s.tok.Count(string(s.buf[start-s.bufBase:]))
	if it.sent {
		it.sentStale = s.sentStale(it)
		s.stale += it.sentStale
	}
	if it.out {
		// Of an output kept as sent, what it holds beyond ctxstore's form
		// is stale already.
		it.outTok = s.tok.Count(it.f.blocks[0].Text+"\n") - it.sentStale
	}
	s.tokens += it.tokens
	if it.kind.isMeta() {
		s.metaTok += it.tokens
	}
	s.offs = append(s.offs, start)
	s.items = append(s.items, it)
	if !it.staleable() {
		// Rendered, and never rendered again: a rebase keeps it as it is.
		// The object (a tool's output, say) stays in the store, not in
		// the stream, so the stream holds what the context shows and
		// nothing more.
		it.obj = nil
	}
}

// staleable reports whether it can go stale, and a rebase then rewrite it
// from its object: a content block, a patch, and a tool result whose
// output is rendered in it. Metadata lines, collapsed references and the
// other tool results never change.
func (it *item) staleable() bool {
	switch it.kind {
	case kMeta, kStub:
		return false
	case kToolRef:
		return it.out || it.sent
	}
	return true
}

// sentStale is what a tool result rendered as the harness sent it holds
// beyond ctxstore's form of it (the line of a read whose file follows as a
// content block, an output's preview): the tokens a rebase that rewrites
// it saves on every later call.
func (s *stream) sentStale(it *item) int {
	c := *it
	c.sent, c.text, c.f = false, "", nil
	c.render()
	n := s.tok.Count(it.text)
	for _, b := range c.f.blocks {
		n -= s.tok.Count(b.Text)
	}
	return max(n, 0)
}

func (s *stream) markStale(i int) {
	if !s.items[i].stale {
		s.items[i].stale = true
		s.stale += s.items[i].liveTokens()
	}
}

// liveTokens is what an item's live content costs: the output of a tool
// result that renders it, else the whole item.
func (it *item) liveTokens() int {
	if it.kind == kToolRef {
		return it.outTok
	}
	return it.tokens
}

// begin starts the rendering with head, and returns its tokens.
func (s *stream) begin(head []byte) int {
	s.head = head
	s.buf = append([]byte(nil), head...)
	s.tokens = s.tok.Count(string(head))
	s.headTok = s.tokens
	return s.tokens
}

// replaceHead renders head instead of the head, moving every item by the
// difference, and returns the change in tokens. Earlier Assembled values
// keep the old buffer.
func (s *stream) replaceHead(head []byte) int {
	oldLen, oldTok := len(s.head), s.tok.Count(string(s.head))
	buf := make([]byte, 0, len(s.buf)-oldLen+len(head)+4096)
	buf = append(append(buf, head...), s.buf[oldLen:]...)
	d := len(head) - oldLen
	for i := range s.offs {
		s.offs[i] += d
	}
	s.buf, s.head = buf, head
	s.headTok = s.tok.Count(string(head))
	dt := s.headTok - oldTok
	s.tokens += dt
	return dt
}

// cut removes the items from p on, with their bytes and tokens (stale
// tokens are the caller's to take off: inputs count in them), and returns
// them. The previous buffers are left untouched, so earlier Assembled
// values stay valid.
func (s *stream) cut(p int) []*item {
	off := s.offs[p]
	tail := s.items[p:]
	s.items = append(make([]*item, 0, len(s.items)+16), s.items[:p]...)
	s.offs = append(make([]int, 0, cap(s.items)), s.offs[:p]...)
	s.buf = append(make([]byte, 0, len(s.buf)+4096), s.buf[:off-s.bufBase]...)
	for _, it := range tail {
		s.tokens -= it.tokens
		if it.kind.isMeta() {
			s.metaTok -= it.tokens
		}
	}
	return tail
}
