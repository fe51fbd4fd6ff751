//go:build linux

package coord

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// bootID is this host's boot id (/proc/sys/kernel/random/boot_id): two
// processes that read the same one run on one kernel, so share its
// CLOCK_MONOTONIC and CLOCK_REALTIME. Empty when it cannot be read.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// monoNow reads CLOCK_MONOTONIC (ns): unlike time.Now's monotonic
// reading, which counts from the process's start, it is the kernel's, so
// comparable between the processes of one host.
func monoNow() (int64, bool) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0, false
	}
	return ts.Nano(), true
}
