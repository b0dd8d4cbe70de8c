package delta

// Accessors only this package's tests read.

// Reset empties the log: the next request must send the whole log.
func (l *Log) Reset() { *l = Log{} }

// Sum returns the digest a client names a base of msgs by (base_sha256).
func Sum(msgs ...[]byte) string {
	var l Log
	for _, m := range msgs {
		l.Add(m)
	}
	return l.Sum()
}

// Call is the call number of the answer held (0 for none).
func (a *Answer) Call() int { return a.call }
