// Package filelock is an exclusive lock on a file between processes
// (flock), waited for under a context: the XTDB node's artifact cache and
// the replay's working directory use it. It imports nothing of the
// project.
package filelock
