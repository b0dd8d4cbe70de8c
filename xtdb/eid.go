package xtdb

import (
	"container/list"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// EIDHash returns XTDB 1.x's 40-hex id of a string entity id: SHA-1 of the
// string's nippy encoding (type byte and big-endian length, then UTF-8).
// XTDB's tx log names the entity of delete, evict and match ops only by
// this hash. A string of 40 hex digits is hashed like any other (XTDB's
// String ids always are; only its EDN reader's #xtdb/id takes hex as is).
func EIDHash(id string) string {
	b := []byte(id)
	var head []byte
	switch n := len(b); {
	case n <= 127:
		head = []byte{0x69, byte(n)}
	case n <= 32767:
		head = binary.BigEndian.AppendUint16([]byte{0x10}, uint16(n))
	default:
		head = binary.BigEndian.AppendUint32([]byte{0x0d}, uint32(n))
	}
	h := sha1.New()
	h.Write(head)
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// UnknownIDPrefix starts the id of a logged op whose entity id cannot be
// found (only its hash is in the log): an evicted entity, or one that never
// had a document in its history, that this client did not write lately.
const UnknownIDPrefix = "xtdb-eid-hash:"

// DefaultIDCache is the default of Options.IDCache.
const DefaultIDCache = 1 << 14

// ids maps entity id hashes back to ids, in bounded memory: it remembers
// the ids of the deletes, evicts and matches this client sent, of the puts
// of the tx log pages it read and of the hashes it looked up, and forgets
// the least recently used beyond its capacity. What it does not hold is
// looked up on the node (see resolve). It also remembers, for a hash that
// could not be resolved, up to which tx the lookup read the log, so that
// the next lookup reads only what is new.
type ids struct {
	mu     sync.Mutex
	cap    int
	byHash map[string]*list.Element // of idEntry
	lru    list.List                // most recently used first
}

// idEntry is a hash and its id, or, with id "", a hash that no put in the
// transactions of its entity's points up to tx `checked` names.
type idEntry struct {
	hash, id string
	checked  int64
}

func newIDs(capacity int) *ids {
	if capacity <= 0 {
		capacity = DefaultIDCache
	}
	return &ids{cap: capacity, byHash: map[string]*list.Element{}}
}

func (r *ids) add(id string) { r.put(idEntry{hash: EIDHash(id), id: id}) }

func (r *ids) put(e idEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if el, ok := r.byHash[e.hash]; ok {
		el.Value = e
		r.lru.MoveToFront(el)
		return
	}
	r.byHash[e.hash] = r.lru.PushFront(e)
	for r.lru.Len() > r.cap {
		last := r.lru.Back()
		delete(r.byHash, last.Value.(idEntry).hash)
		r.lru.Remove(last)
	}
}

// get returns the entry of hash (ok false if there is none).
func (r *ids) get(hash string) (idEntry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	el, ok := r.byHash[hash]
	if !ok {
		return idEntry{}, false
	}
	r.lru.MoveToFront(el)
	return el.Value.(idEntry), true
}

// resolve returns the id whose hash is hash: from memory, else from the
// entity's history on the node, named by eid-edn #xtdb/id (which XTDB's
// own HTTP module reads too). A document of any of its points names it;
// if every point is a tombstone, a put in one of the transactions that
// wrote those points may (a put overwritten in its own transaction).
// Otherwise the id cannot be known (an evicted entity, or one without a
// document in its history) and UnknownIDPrefix + hash is returned. Memory
// is bounded by the cache and by one entity's history.
//
// hint, if not nil, is where the entity probably had a document: for an op
// of tx T at valid time V, (V, T-1). One read there usually names it.
func (s *Store) resolve(ctx context.Context, hash string, hint *store.Basis) (string, error) {
	e, ok := s.ids.get(hash)
	if ok && e.id != "" {
		return e.id, nil
	}
	checked := int64(-1)
	if ok {
		checked = e.checked
	}
	id, checked, err := s.lookupHash(ctx, hash, hint, checked)
	if err != nil {
		return "", err
	}
	s.ids.put(idEntry{hash: hash, id: id, checked: checked})
	if id == "" {
		return UnknownIDPrefix + hash, nil
	}
	return id, nil
}

// lookupHash finds the id of hash on the node ("" if it cannot), reading
// only the transactions after tx `checked` for puts; it returns the last
// tx it has read so.
func (s *Store) lookupHash(ctx context.Context, hash string, hint *store.Basis, checked int64) (string, int64, error) {
	eid := url.Values{"eid-edn": {`#xtdb/id "` + hash + `"`}}
	label := UnknownIDPrefix + hash
	if hint != nil && (hint.TxID == nil || *hint.TxID >= 0) {
		doc, err := s.entity(ctx, eid, label, *hint)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", checked, err
		}
		if id, ok := doc[store.IDKey].(string); ok && EIDHash(id) == hash {
			return id, checked, nil
		}
	}
	rows, err := s.history(ctx, eid, label, store.HistoryOptions{Order: store.Desc, WithCorrections: true,
		Basis: store.Basis{ValidTime: store.FarFuture}})
	if err != nil {
		return "", checked, err
	}
	for _, r := range rows {
		if r.Deleted {
			continue
		}
		// That one point, with its document.
		end, endTx := r.ValidTime.Add(time.Millisecond), r.TxID+1
		one, err := s.history(ctx, eid, label, store.HistoryOptions{Order: store.Asc, WithCorrections: true, WithDocs: true,
			StartValidTime: &r.ValidTime, EndValidTime: &end, StartTxID: &r.TxID, EndTxID: &endTx,
			Basis: store.Basis{ValidTime: store.FarFuture}})
		if err != nil {
			return "", checked, err
		}
		for _, p := range one {
			if id, ok := p.Doc[store.IDKey].(string); ok && EIDHash(id) == hash {
				return id, checked, nil
			}
		}
		break
	}
	txIDs := make([]int64, 0, len(rows))
	for _, r := range rows {
		if r.TxID > checked {
			txIDs = append(txIDs, r.TxID)
		}
	}
	slices.Sort(txIDs)
	txIDs = slices.Compact(txIDs)
	for _, tx := range txIDs {
		txs, err := s.rawTxLog(ctx, tx-1, 1)
		if err != nil {
			return "", checked, err
		}
		for _, t := range txs {
			for _, op := range t.ops {
				if op.Kind == store.OpPut && op.ID != "" && EIDHash(op.ID) == hash {
					return op.ID, checked, nil
				}
			}
		}
		checked = tx
	}
	return "", checked, nil
}
