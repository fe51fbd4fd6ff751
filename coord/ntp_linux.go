//go:build linux

package coord

import (
	"time"

	"golang.org/x/sys/unix"
)

// readNTP reads the kernel's clock discipline: adjtimex with no modes set
// only reads, and needs no privilege.
func readNTP() NTPStatus {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return NTPStatus{}
	}
	return NTPStatus{Known: true, Synced: tx.Status&unix.STA_UNSYNC == 0 && state != unix.TIME_ERROR,
		MaxError: time.Duration(tx.Maxerror) * time.Microsecond, EstError: time.Duration(tx.Esterror) * time.Microsecond}
}
