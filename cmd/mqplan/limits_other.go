//go:build !unix

package main

// openFileLimit is 0, no limit known, where there is no RLIMIT_NOFILE
// (Windows: a process's sockets are bounded by memory, not a count).
func openFileLimit() int { return 0 }
