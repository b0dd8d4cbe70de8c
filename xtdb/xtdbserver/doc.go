// Package xtdbserver runs a real XTDB 1.24.5 node with its HTTP API as a child JVM
// process, for tests and conformance checks of the Go driver.
//
// Requirements on the machine: a JDK (17 is known to work), Maven
// (mvn) and access to Maven Central. Nothing else: no Docker.
//
// How it is assembled: xtdb-core 1.24.5 (the released node) and xtdb-rocksdb
// 1.24.3 (the newest the reachable Maven Central serves) come from Maven
// Central via jvm/pom.xml. XTDB's own HTTP module, com.xtdb:xtdb-http-server,
// is not served there, so the node runs behind ctxstore's own HTTP front,
// jvm/clj/ctxstore/xtdb_http.clj: the same /_xtdb paths, parameters and EDN
// answers for the endpoints the driver uses, each answer being what the
// xtdb.api function returns. EnsureClasspath resolves the jars and compiles
// the front once per cache directory.
//
// Tests get a shared node through package xtdbtest (ForTest).
package xtdbserver
