//go:build linux

package coord

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqplan/mqplan/stats"
)

// readNTP reads the kernel's clock discipline: adjtimex with no modes set
// only reads, and needs no privilege.
func readNTP() stats.NTP {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return stats.NTP{}
	}
	return stats.NTP{Known: true, Synced: tx.Status&unix.STA_UNSYNC == 0 && state != unix.TIME_ERROR,
		MaxError: time.Duration(tx.Maxerror) * time.Microsecond, EstError: time.Duration(tx.Esterror) * time.Microsecond}
}
