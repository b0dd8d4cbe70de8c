package stats

// Analyze computes a report from sessions' events. Events are assumed to
// be in scope already (Compute filters by time and session).
func Analyze(in []Input, o Options) *Report {
	o = o.withDefaults()
	r := newReport(o)
	for _, x := range in {
		r.add(analyzeSession(x, o), o)
	}
	r.finish()
	return r
}
