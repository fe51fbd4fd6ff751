package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/runner"
)

// TestProgressLine: the progress line says "clients lost" for clients
// whose connection is down, so that it cannot be read as lost deliveries.
func TestProgressLine(t *testing.T) {
	var b strings.Builder
	p := &progressPrinter{out: &b, planned: 30 * time.Second}
	p.print(runner.Progress{Phase: phase.Steady, Elapsed: 12 * time.Second, Connected: 198, Clients: 200, Lost: 2, SendRate: 200, RecvRate: 199})
	want := "[steady        12s/30s] connected 198/200  clients lost 2  send 200/s  recv 199/s  p99 -  errors 0\n"
	if b.String() != want {
		t.Errorf("progress line\n%q, want\n%q", b.String(), want)
	}
}
