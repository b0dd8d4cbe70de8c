package xtdb

// len is the number of ids the cache holds (for the tests; not in the
// binary).
func (r *ids) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lru.Len()
}
