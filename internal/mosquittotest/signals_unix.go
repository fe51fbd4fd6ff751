//go:build unix

package mosquittotest

import (
	"os"
	"syscall"
)

// sigStop and sigCont pause and resume a process (Pause, Resume).
var sigStop, sigCont os.Signal = syscall.SIGSTOP, syscall.SIGCONT
