package emqttbench

import (
	"fmt"
	"io"
	"time"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/runner"
)

// Progress prints emqtt-bench's per-second lines from the runner's
// progress, once a second, and only when the count changed (as
// emqtt-bench does):
//
//	conn: connected(<s>s): total=N, rate=N(conn/sec)
//	sub:  recv(<s>s): total=N, rate=N(msg/sec)
//	pub:  sent(<s>s): total=N, rate=N(msg/sec)
//
// Once every client has connected (and subscribed), a notice says so on
// notices (the command's standard error), since a sub prints nothing
// until messages arrive. A Progress serves one run; Update is its
// runner.Options.Progress.
type Progress struct {
	w, notices io.Writer
	kind       Kind

	last                time.Duration
	total, printedTotal int64
	printed, ready      bool
	// printedSecond is the second of the last line printed: the run's
	// final snapshot comes a fraction of a second after the last tick and
	// would print that second again.
	printedSecond string
}

// NewProgress returns the per-second lines of a kind command, written to
// w, with the ready notice on notices (nil: no notice).
func NewProgress(w, notices io.Writer, kind Kind) *Progress {
	return &Progress{w: w, notices: notices, kind: kind}
}

// Update takes one progress snapshot of the run and prints what it
// changed.
func (p *Progress) Update(pr runner.Progress) {
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
	secs := (pr.Elapsed - p.last).Seconds()
	p.last = pr.Elapsed
	if secs <= 0 {
		return
	}
	var name, unit string
	var rate float64
	switch p.kind {
	case Conn:
		name, unit = "connected", "conn/sec"
		rate = float64(int64(pr.Connected)-p.total) / secs
		p.total = int64(pr.Connected)
	case Sub:
		name, unit, rate, p.total = "recv", "msg/sec", pr.RecvRate, pr.Received
	case Pub:
		name, unit, rate, p.total = "sent", "msg/sec", pr.SendRate, pr.Sent
	}
	second := fmt.Sprintf("%.0fs", pr.Elapsed.Seconds())
	if p.printed && (p.total == p.printedTotal || second == p.printedSecond) || !p.printed && p.total == 0 {
		return
	}
	p.printed, p.printedTotal, p.printedSecond = true, p.total, second
	fmt.Fprintf(p.w, "%s(%s): total=%d, rate=%.0f(%s)\n", name, second, p.total, rate, unit)
}
