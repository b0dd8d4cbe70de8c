// Package xtdbserver runs a real XTDB 1.24.5 node as a child JVM process
// and answers XTDB's HTTP API on 127.0.0.1: the node behind
// `ctxstore xtdb serve` (local use and production), the nodes of an XTDB
// cluster, and the nodes the tests start (through package xtdbtest).
//
// Requirements on the machine: a JDK (17 is known to work), Maven (mvn) and
// access to Maven Central. Nothing else: no Docker.
//
// EnsureClasspath resolves the node once per cache directory
// (DefaultCacheDir): it writes the embedded jvm/pom.xml and runs Maven for
// the classpath (xtdb-core and xtdb-jdbc 1.24.5; xtdb-rocksdb and
// xtdb-lucene 1.24.3, the newest the reachable Maven Central serves; the
// PostgreSQL driver), then AOT-compiles ctxstore's Clojure namespaces
// (jvm/clj) with XTDB's. A lock on the cache directory serialises
// concurrent callers, across processes too.
//
// Start writes a node configuration and starts the JVM; it returns once
// GET /_xtdb/status answers. What the node keeps, by Options:
//
//   - nothing set: everything in memory (the tests' default);
//   - DataDir: the tx log, documents and indexes in RocksDB under DataDir;
//   - Postgres: a cluster node, its tx log and documents in that
//     PostgreSQL database (shared by every node), its index in local RocksDB
//     (docs/xtdb-cluster.md);
//   - ConfigFile: an XTDB node configuration (EDN) used as it is.
//
// Every node also has full-text search: XTDB's Lucene module with
// ctxstore's indexer (jvm/clj/ctxstore/xtdb_search.clj).
//
// ctxstore's namespaces, loaded into the node:
//
//   - xtdb_http.clj, the HTTP front: XTDB's own HTTP module
//     (com.xtdb:xtdb-http-server) is not served on the reachable Maven
//     Central, so the front answers the same /_xtdb paths, parameters and
//     EDN for the endpoints the driver uses, each answer what the xtdb.api
//     function returns (docs/xtdb-api.md), plus ctxstore's search route;
//   - xtdb_fixes.clj: a correction to XTDB 1.24.5's index (an ascending
//     entity history read empty when the entity sorted last in RocksDB);
//   - xtdb_txlog.clj and xtdb_docs.clj: the cluster's JDBC tx log with a
//     configurable poll interval, and its document store reading a
//     document's rows in event order so that one put back after an evict
//     is not read as evicted.
//
// Stop ends the node's process group gracefully, Kill at once (for crash
// tests); StatusOK checks any node's status endpoint.
package xtdbserver
