package emqttbench

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/runner"
)

// Progress prints emqtt-bench's per-second lines from the runner's
// progress, in the format of emqtt-bench's print_stats and main loop (the
// classic lines that scripts parse; current emqtt-bench releases print
// `28s recv total=2440 rate=2440.00/sec` instead):
//
//	connected: N                                every command, when the count changed
//	recv(<ms>): total=N, rate=N(msg/sec)        sub, in a second that received
//	sent(<ms>): total=N, rate=N(msg/sec)        pub, in a second that sent
//
// <ms> is milliseconds since the run started, as emqtt-bench prints
// (`recv(28004)`). A counter's line appears only when its total changed
// since the previous snapshot, as emqtt-bench does; its rate is the change
// per second since that snapshot, which at the runner's one-second ticks
// is emqtt-bench's "total now − total a second ago". N in `connected: N`
// is the number of clients connected now (emqtt-bench's count of
// successful connects only grows: it never reconnects); the run's own
// disconnect at its end prints no line.
//
// Once every client has connected (and subscribed), a notice says so on
// notices (the command's standard error), since a sub prints nothing
// until messages arrive. A Progress serves one run; Update is its
// runner.Options.Progress.
type Progress struct {
	w, notices io.Writer
	kind       Kind

	ready bool
	// last is the previous snapshot's time and totals: a line's rate is
	// the change since then.
	last      time.Duration
	lastTotal int64
	// connected is the count last printed in a `connected: N` line.
	connected int
}

// NewProgress returns the per-second lines of a kind command, written to
// w, with the ready notice on notices (nil: no notice).
func NewProgress(w, notices io.Writer, kind Kind) *Progress {
	return &Progress{w: w, notices: notices, kind: kind}
}

// Update takes one progress snapshot of the run and prints what it
// changed.
func (p *Progress) Update(pr runner.Progress) {
	// The run's own disconnect at its end is not news.
	if pr.Connected != p.connected && pr.Phase != phase.Disconnect {
		p.connected = pr.Connected
		fmt.Fprintf(p.w, "connected: %d\n", pr.Connected)
	}
	if !p.ready && p.notices != nil && pr.Phase != phase.Connect && pr.Phase != phase.Subscribe {
		p.ready = true
		what := map[Kind]string{Conn: "connected", Sub: "connected and subscribed", Pub: "connected and publishing"}[p.kind]
		n := pr.Connected
		if p.kind == Sub {
			// A client whose every subscription was refused is not
			// subscribed, however connected it is.
			n = pr.Subscribed
		}
		fmt.Fprintf(p.notices, "mqplan: %d of %d clients %s (Ctrl-C to stop)\n", n, pr.Clients, what)
	}
	var name string
	var total int64
	switch p.kind {
	case Sub:
		name, total = "recv", pr.Received
	case Pub:
		name, total = "sent", pr.Sent
	default:
		return
	}
	secs := (pr.Elapsed - p.last).Seconds()
	if secs <= 0 {
		return
	}
	delta := total - p.lastTotal
	p.last, p.lastTotal = pr.Elapsed, total
	if delta == 0 {
		return
	}
	rate := int64(math.Round(float64(delta) / secs))
	fmt.Fprintf(p.w, "%s(%d): total=%d, rate=%d(msg/sec)\n", name, pr.Elapsed.Milliseconds(), total, rate)
}
