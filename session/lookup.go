package session

// lookup finds ids in a State's long lists without scanning them (per-call
// work must not grow with the session). It maps each id to its
// position in Index, Pool and Toolcalls, and each Toolcalls target to the
// positions of the calls standing for it, for the first entries of each
// list: those of the state the session last wrote, which never change (the
// lists are only appended to, and a toolcall's id and target stay at their
// position). A draft shares its session's lookup and reads it only; what
// the draft appended lies past the covered entries and is scanned (a call
// adds a few entries). Session.Update extends the lookup once the draft's
// state is written, never before, so a failed update leaves nothing in it.
type lookup struct {
	index, pool, calls map[string]int
	targets            map[string][]int
	nIndex, nPool      int
	nCalls             int
}

// newLookup returns a lookup covering every entry of s.
func newLookup(s *State) *lookup {
	l := &lookup{
		index:   make(map[string]int, len(s.Index)),
		pool:    make(map[string]int, len(s.Pool)),
		calls:   make(map[string]int, len(s.Toolcalls)),
		targets: map[string][]int{},
	}
	l.extend(s)
	return l
}

// extend covers the entries s appended since the lookup last covered it.
func (l *lookup) extend(s *State) {
	for ; l.nIndex < len(s.Index); l.nIndex++ {
		l.index[s.Index[l.nIndex]] = l.nIndex
	}
	for ; l.nPool < len(s.Pool); l.nPool++ {
		l.pool[s.Pool[l.nPool]] = l.nPool
	}
	for ; l.nCalls < len(s.Toolcalls); l.nCalls++ {
		c := s.Toolcalls[l.nCalls]
		if _, dup := l.calls[c.ID]; !dup {
			l.calls[c.ID] = l.nCalls
		}
		if c.Target != "" {
			l.targets[c.Target] = append(l.targets[c.Target], l.nCalls)
		}
	}
}

// find reports whether id is among list's entries: through m for the first
// n, by a scan of the rest.
func find(m map[string]int, n int, list []string, id string) bool {
	if p, ok := m[id]; ok && p < len(list) && list[p] == id {
		return true
	}
	for _, x := range list[min(n, len(list)):] {
		if x == id {
			return true
		}
	}
	return false
}

// toolcall returns the position of the first toolcall with id in s, or -1.
func (s *State) toolcall(id string) int {
	if l := s.look; l != nil {
		if p, ok := l.calls[id]; ok && p < len(s.Toolcalls) && s.Toolcalls[p].ID == id {
			return p
		}
		for i := min(l.nCalls, len(s.Toolcalls)); i < len(s.Toolcalls); i++ {
			if s.Toolcalls[i].ID == id {
				return i
			}
		}
		return -1
	}
	for i := range s.Toolcalls {
		if s.Toolcalls[i].ID == id {
			return i
		}
	}
	return -1
}

// Recorded reports whether id is a recorded toolcall of s.
func (s State) Recorded(id string) bool { return s.toolcall(id) >= 0 }

// ToolcallsFor returns the positions in Toolcalls of the calls standing
// for target (Toolcall.Target), in order.
func (s State) ToolcallsFor(target string) []int {
	var out []int
	n := 0
	if l := s.look; l != nil {
		for _, p := range l.targets[target] {
			if p < len(s.Toolcalls) && s.Toolcalls[p].Target == target {
				out = append(out, p)
			}
		}
		n = min(l.nCalls, len(s.Toolcalls))
	}
	for i := n; i < len(s.Toolcalls); i++ {
		if s.Toolcalls[i].Target == target {
			out = append(out, i)
		}
	}
	return out
}

// ToolcallAt returns the position in Toolcalls of toolcall id, or -1.
func (s State) ToolcallAt(id string) int { return s.toolcall(id) }
