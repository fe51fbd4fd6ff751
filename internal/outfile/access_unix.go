//go:build unix

package outfile

import "syscall"

// writable reports whether this process may write path (access(2) with
// W_OK), without opening it: opening a FIFO would wait for its reader.
func writable(path string) error { return syscall.Access(path, 2 /* W_OK */) }
