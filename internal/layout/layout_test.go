// Package layout holds one test: the import rules the README's Layout
// section states, checked against `go list -deps`, so that a change that
// makes the report pull in the broker, or the plan language pull in the
// engine, fails CI instead of drifting silently.
package layout

import (
	"os/exec"
	"strings"
	"testing"
)

// heavy are modules only the process, the engine and the live endpoint
// may bring in: the embedded broker, the MQTT and WebSocket libraries,
// x/sys and the Prometheus client. A library user who only reads results
// or plans should not pay for them.
var heavy = []string{
	"github.com/mochi-mqtt/",
	"github.com/eclipse/paho.golang/",
	"github.com/gorilla/websocket",
	"golang.org/x/sys/",
	"github.com/prometheus/",
}

// TestImportRules: every package's dependencies (tests aside) respect the
// layout: imports point from the process down to the plan language, and
// the pure packages bring in no heavy module.
func TestImportRules(t *testing.T) {
	const mod = "github.com/mqplan/mqplan/"
	tests := []struct {
		pkg       string
		forbidden []string // packages (and those below them) it may not depend on
	}{
		{"plans", append([]string{mod + "runner", mod + "report", mod + "stats", mod + "broker", mod + "live", mod + "cmd"}, heavy...)},
		{"threshold", append([]string{mod + "plans", mod + "runner", mod + "report", mod + "stats"}, heavy...)},
		{"metric", append([]string{mod + "plans", mod + "threshold", mod + "stats"}, heavy...)},
		{"phase", append([]string{mod + "plans", mod + "stats"}, heavy...)},
		{"stats", append([]string{mod + "plans", mod + "runner", mod + "report", mod + "broker"}, heavy...)},
		{"brokerstat", append([]string{mod + "plans", mod + "runner", mod + "stats", mod + "report"}, heavy...)},
		{"procstat", append([]string{mod + "plans", mod + "runner", mod + "stats", mod + "report"}, heavy...)},
		{"report", append([]string{mod + "runner", mod + "broker", mod + "live", mod + "cmd", mod + "brokerstat/exposition"}, heavy...)},
		{"runner", []string{mod + "report", mod + "broker", mod + "live", mod + "cmd", "github.com/mochi-mqtt/"}},
		{"broker", []string{mod + "plans", mod + "runner", mod + "report", mod + "live", mod + "cmd"}},
		{"findmax", append([]string{mod + "plans", mod + "runner", mod + "report", mod + "stats", mod + "threshold", mod + "metric", mod + "broker", mod + "live", mod + "cmd"}, heavy...)},
		{"partial", append([]string{mod + "runner", mod + "report", mod + "broker", mod + "live", mod + "cmd"}, heavy...)},
		// coord may read the host's clocks through x/sys (adjtimex, and
		// CLOCK_MONOTONIC to align shards on one host exactly): only the
		// process uses it, and the clock figures are its whole point.
		{"coord", append([]string{mod + "plans", mod + "runner", mod + "report", mod + "stats", mod + "partial", mod + "broker", mod + "live", mod + "cmd"}, without(heavy, "golang.org/x/sys/")...)},
		{"live", []string{mod + "plans", mod + "runner", mod + "report", mod + "broker", mod + "cmd"}},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "../../"+tt.pkg).Output()
			if err != nil {
				t.Fatalf("go list %s: %v", tt.pkg, err)
			}
			for _, dep := range strings.Fields(string(out)) {
				if dep == mod+tt.pkg {
					continue
				}
				for _, f := range tt.forbidden {
					if within(dep, f) {
						t.Errorf("%s depends on %s", tt.pkg, dep)
					}
				}
			}
		})
	}
}

// within reports whether package dep is f or below it; a prefix that
// ends in "/" (a module path) matches every package under it.
func within(dep, f string) bool {
	if strings.HasSuffix(f, "/") {
		return strings.HasPrefix(dep, f)
	}
	return dep == f || strings.HasPrefix(dep, f+"/")
}

// without returns list without s.
func without(list []string, s string) []string {
	var out []string
	for _, v := range list {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}
