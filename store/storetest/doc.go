// Package storetest is the conformance suite every store.Store backend
// runs from its own tests, in the manner of gocloud's drivertest and
// perkeep's kvtest.
//
// Run runs the cases: the XTDB 1.24.5 tests that pin the bitemporal rules
// (tx_test.clj, api_test.clj, query_test.clj, space_tutorial_test.clj,
// kv/index_store_test.clj), ported as data tables and named after them,
// plus the cases of the portable query, the tx log and the error contract.
// The cases never assume a private or empty store, so they also run
// against a shared, long-lived XTDB server:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Harness{Name: "sqlite", New: newStore, SetClock: clock.Set})
//	}
//
// Differential runs the same random transactions on two stores and
// compares every answer, minimizing the first divergence to a short
// repro; against a real XTDB server it is the strongest check there is.
//
// Model is a naive in-memory executable model of the rules: the oracle
// for Differential until a real server is at hand, itself checked by Run.
package storetest
