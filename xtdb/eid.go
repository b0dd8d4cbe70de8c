package xtdb

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"sync"

	"github.com/ctxstore/ctxstore/store"
)

// EIDHash returns XTDB 1.x's 40-hex id of a string entity id: SHA-1 of the
// string's nippy encoding (type byte and big-endian length, then UTF-8),
// or the string itself when it is already 40 hex digits (XTDB reads such a
// string as an id). XTDB's tx log names the entity of delete, evict and
// match ops only by this hash.
func EIDHash(id string) string {
	if len(id) == 40 && isHex(id) {
		return strings.ToLower(id)
	}
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

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// UnknownIDPrefix starts the id of a logged op whose entity id XTDB no
// longer knows (only its hash is in the log: an evicted entity, or one that
// never had a document) and this client never saw.
const UnknownIDPrefix = "xtdb-eid-hash:"

// ids maps entity id hashes back to ids: from every id this client sent,
// and from the documents of the server's tx log, read once from the start
// and then incrementally.
type ids struct {
	mu      sync.Mutex
	byHash  map[string]string
	scanned int64 // tx log read up to here (-1: nothing)
}

func newIDs() *ids { return &ids{byHash: map[string]string{}, scanned: -1} }

func (r *ids) add(id string) {
	r.mu.Lock()
	r.byHash[EIDHash(id)] = id
	r.mu.Unlock()
}

func (r *ids) lookup(hash string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.byHash[hash]
	return id, ok
}

// resolve returns the id of hash, reading the rest of the tx log for
// documents if it is not known yet.
func (s *Store) resolve(ctx context.Context, hash string) (string, error) {
	if id, ok := s.ids.lookup(hash); ok {
		return id, nil
	}
	s.ids.mu.Lock()
	after := s.ids.scanned
	s.ids.mu.Unlock()
	raw, err := s.rawTxLog(ctx, after, 0)
	if err != nil {
		return "", err
	}
	for _, lt := range raw {
		for _, op := range lt.ops {
			if op.Kind == store.OpPut && op.ID != "" {
				s.ids.add(op.ID)
			}
		}
		s.ids.mu.Lock()
		if lt.ID > s.ids.scanned {
			s.ids.scanned = lt.ID
		}
		s.ids.mu.Unlock()
	}
	if id, ok := s.ids.lookup(hash); ok {
		return id, nil
	}
	return UnknownIDPrefix + hash, nil
}
