package main

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/report"
)

// systemLimits reads the limits a run must fit in: the open-file limit
// (Go raises the soft limit to the hard one at start, so the hard limit is
// what a run gets) and the ephemeral port range per source address; and
// the clock, explain's sample time for a payload template's %t and %T.
func systemLimits() report.Limits {
	l := report.Limits{Now: time.Now()}
	l.OpenFiles = openFileLimit()
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 {
			lo, err1 := strconv.Atoi(f[0])
			hi, err2 := strconv.Atoi(f[1])
			if err1 == nil && err2 == nil && hi >= lo {
				l.EphemeralPorts = hi - lo + 1
			}
		}
	}
	return l
}
