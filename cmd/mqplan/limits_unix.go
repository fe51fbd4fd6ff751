//go:build unix

package main

import "syscall"

// openFileLimit is the hard RLIMIT_NOFILE (at most 1<<30), or 0 when it
// cannot be read: no limit known.
func openFileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return int(min(rl.Max, 1<<30))
}
