package emqttbench

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/golden"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/runner"
)

// emqttBenchLine is every line emqtt-bench's classic print_stats and main
// loop write, as their io:format strings say: "~s(~w): total=~w,
// rate=~w(msg/sec)~n" for the recv and sent counters (milliseconds since
// start in parentheses, integers throughout) and "connected: ~w" per
// connection. A script that parses emqtt-bench parses these.
var emqttBenchLine = regexp.MustCompile(`^((recv|sent)\((\d+)\): total=(\d+), rate=(-?\d+)\(msg/sec\)|connected: \d+)$`)

// TestProgress pins the per-second lines of each command for a sequence
// of the runner's snapshots (its clock is the snapshots' Elapsed: the
// runner ticks about once a second, with jitter, and takes a last snapshot
// when the run ends), and checks that every line has emqtt-bench's
// format.
func TestProgress(t *testing.T) {
	ms := time.Millisecond
	connect := func(at time.Duration, n int) runner.Progress {
		return runner.Progress{Phase: phase.Connect, Elapsed: at, Connected: n, Clients: 5}
	}
	tests := []struct {
		name  string
		kind  Kind
		steps []runner.Progress
	}{
		{name: "sub", kind: Sub, steps: []runner.Progress{
			connect(1001*ms, 3), connect(2002*ms, 5),
			// Nothing arrives for a while: no line.
			{Phase: phase.Steady, Elapsed: 3003 * ms, Clients: 5, Subscribed: 5, Connected: 5},
			{Phase: phase.Steady, Elapsed: 4004 * ms, Clients: 5, Subscribed: 5, Connected: 5},
			{Phase: phase.Steady, Elapsed: 5004 * ms, Clients: 5, Subscribed: 5, Connected: 5, Received: 2440},
			{Phase: phase.Steady, Elapsed: 6005 * ms, Clients: 5, Subscribed: 5, Connected: 5, Received: 4880},
			// A second with nothing new prints no line; the next line's
			// rate is the change since that second's snapshot.
			{Phase: phase.Steady, Elapsed: 7005 * ms, Clients: 5, Subscribed: 5, Connected: 5, Received: 4880},
			{Phase: phase.Steady, Elapsed: 8006 * ms, Clients: 5, Subscribed: 5, Connected: 5, Received: 5000},
			// A client drops and comes back.
			{Phase: phase.Steady, Elapsed: 9006 * ms, Clients: 5, Subscribed: 5, Connected: 4, Received: 5000},
			{Phase: phase.Steady, Elapsed: 10007 * ms, Clients: 5, Subscribed: 5, Connected: 5, Received: 6000},
			// The run's end: its last snapshot comes a fraction of a
			// second after the last tick, and its own disconnect is not
			// printed.
			{Phase: phase.Disconnect, Elapsed: 10257 * ms, Clients: 5, Subscribed: 5, Connected: 0, Received: 6100},
		}},
		{name: "pub", kind: Pub, steps: []runner.Progress{
			connect(1000*ms, 2),
			{Phase: phase.Steady, Elapsed: 2001 * ms, Clients: 2, Connected: 2, Sent: 20},
			{Phase: phase.Steady, Elapsed: 3001 * ms, Clients: 2, Connected: 2, Sent: 40, Received: 7},
			// Jitter: 1.002s for 20 messages is still 20 a second.
			{Phase: phase.Steady, Elapsed: 4003 * ms, Clients: 2, Connected: 2, Sent: 60},
			{Phase: phase.Drain, Elapsed: 4023 * ms, Clients: 2, Connected: 2, Sent: 61},
			{Phase: phase.Disconnect, Elapsed: 4100 * ms, Clients: 2, Connected: 0, Sent: 61},
		}},
		{name: "conn", kind: Conn, steps: []runner.Progress{
			connect(1000*ms, 3), connect(2000*ms, 5),
			{Phase: phase.Steady, Elapsed: 3000 * ms, Clients: 5, Subscribed: 5, Connected: 5},
			{Phase: phase.Steady, Elapsed: 4000 * ms, Clients: 5, Subscribed: 5, Connected: 4},
			{Phase: phase.Disconnect, Elapsed: 4500 * ms, Clients: 5, Subscribed: 5, Connected: 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, notices bytes.Buffer
			p := NewProgress(&out, &notices, tt.kind)
			for _, st := range tt.steps {
				p.Update(st)
			}
			got := out.String() + "--- standard error:\n" + notices.String()
			golden.Check(t, filepath.Join("testdata", "golden", "progress_"+tt.name+".txt"), []byte(got))
			for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
				if !emqttBenchLine.MatchString(line) {
					t.Errorf("line %q is not in emqtt-bench's format", line)
				}
			}
		})
	}
}

// TestProgressRate checks the rate on each line: the change in the total
// per second since the previous snapshot, rounded, so that at one-second
// ticks it is emqtt-bench's "total now − total at the last tick".
func TestProgressRate(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name       string
		prev, next runner.Progress
		want       string
	}{
		{name: "one second", prev: runner.Progress{Elapsed: 1000 * ms, Received: 100}, next: runner.Progress{Elapsed: 2000 * ms, Received: 2540},
			want: "recv(2000): total=2540, rate=2440(msg/sec)\n"},
		{name: "a late tick", prev: runner.Progress{Elapsed: 1000 * ms, Received: 100}, next: runner.Progress{Elapsed: 2004 * ms, Received: 2540},
			want: "recv(2004): total=2540, rate=2430(msg/sec)\n"},
		{name: "the last quarter second", prev: runner.Progress{Elapsed: 1000 * ms, Received: 100}, next: runner.Progress{Elapsed: 1250 * ms, Received: 110},
			want: "recv(1250): total=110, rate=40(msg/sec)\n"},
		{name: "milliseconds are truncated, as emqtt-bench's div 1000", prev: runner.Progress{Elapsed: 1000 * ms, Received: 1}, next: runner.Progress{Elapsed: 28004*ms + 999*time.Microsecond, Received: 2441},
			want: "recv(28004): total=2441, rate=90(msg/sec)\n"},
		{name: "a snapshot at the same instant waits for the next", prev: runner.Progress{Elapsed: 1000 * ms, Received: 1}, next: runner.Progress{Elapsed: 1000 * ms, Received: 5},
			want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			p := NewProgress(&b, nil, Sub)
			p.Update(tt.prev)
			b.Reset()
			p.Update(tt.next)
			if b.String() != tt.want {
				t.Errorf("got %q, want %q", b.String(), tt.want)
			}
		})
	}
}
