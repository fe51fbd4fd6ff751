//go:build !unix

package mosquittotest

import "os"

// sigStop and sigCont are nil where a process cannot be paused by a
// signal (Windows): Pause and Resume then fail the test, and Kill kills.
var sigStop, sigCont os.Signal
