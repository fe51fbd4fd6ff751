package report

import (
	"fmt"
	"github.com/mqplan/mqplan/phase"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mqplan/mqplan/plans"
)

// Limits are the machine limits a run must fit in, read by the caller
// (explain itself does no system calls). Zero means unknown.
type Limits struct {
	// OpenFiles is the per-process open-file limit.
	OpenFiles int
	// EphemeralPorts is the size of the local port range, per source address
	// and broker address.
	EphemeralPorts int
	// Now is the sample send time explain renders a payload template's
	// time placeholders (%t, %T) at: the command gives the current time,
	// tests a fixed one. Zero renders them at the Unix epoch.
	Now time.Time
}

// descriptorSlack is what a run needs besides one descriptor per client:
// listeners, the runtime's poller, stdio, the JSON file.
const descriptorSlack = 32

// Needs are the resources a program needs at its peak.
type Needs struct {
	// Connections is the peak number of client connections.
	Connections int
	// FileDescriptors counts one per client, one more per client when the
	// broker runs in-process (its side of each connection), plus slack.
	FileDescriptors int
	// PortsPerAddress is the most local ports used from one source address
	// towards one broker address.
	PortsPerAddress int
}

// ComputeNeeds works out the peak resources of a program.
func ComputeNeeds(prog *plans.Program) Needs {
	return shardNeeds(prog, nil, 1)[0]
}

// shardNeeds works out the peak resources of each of n processes, the
// clients of shard s being those with shard[i] == s (all of them when
// shard is nil). The in-process broker holds the other end of every
// connection in the one process it runs in: counted for a single process,
// noted apart for shards (explain_shards.go).
func shardNeeds(prog *plans.Program, shard []int32, n int) []Needs {
	needs := make([]Needs, n)
	type pair struct {
		shard     int32
		src, addr string
	}
	pairs := map[pair]int{}
	for i := range prog.Clients {
		c := &prog.Clients[i]
		var s int32
		if shard != nil {
			s = shard[i]
		}
		needs[s].Connections++
		k := pair{s, c.SourceAddr, c.URL}
		pairs[k]++
		needs[s].PortsPerAddress = max(needs[s].PortsPerAddress, pairs[k])
	}
	for s := range needs {
		needs[s].FileDescriptors = needs[s].Connections + descriptorSlack
		if shard == nil && prog.Plan.Broker.IsEmbedded() {
			needs[s].FileDescriptors += needs[s].Connections
		}
	}
	return needs
}

// Warnings lists what will not fit in the machine's limits.
func (n Needs) Warnings(l Limits) []string {
	return n.warnings(l, "split it across processes (mqplan run --workers auto) or lower the client count")
}

// warnings lists what will not fit, the open-file limit's advice ending
// with fewer: what else lowers the descriptors one process needs.
func (n Needs) warnings(l Limits, fewer string) []string {
	var w []string
	if l.OpenFiles > 0 && n.FileDescriptors > l.OpenFiles {
		w = append(w, fmt.Sprintf("needs %d file descriptors but the open-file limit is %d: raise it (ulimit -n) or %s", n.FileDescriptors, l.OpenFiles, fewer))
	}
	if l.EphemeralPorts > 0 && n.PortsPerAddress > l.EphemeralPorts {
		w = append(w, fmt.Sprintf("needs %d local ports from one source address to one broker address but the ephemeral range has %d: add broker.source_addresses", n.PortsPerAddress, l.EphemeralPorts))
	}
	return w
}

// WriteExplain prints the compiled program without connecting anything:
// the groups, each phase's planned load, and the resources the run needs.
func WriteExplain(w io.Writer, prog *plans.Program, l Limits) error {
	p := prog.Plan
	var b strings.Builder
	fmt.Fprintf(&b, "plan %s (%s)\n", p.Name, p.File)
	if p.Description != "" {
		fmt.Fprintf(&b, "  %s\n", strings.TrimSpace(p.Description))
	}
	broker := strings.Join(p.Broker.URLs, ", ")
	if p.Broker.IsEmbedded() {
		broker = "embedded (mochi-mqtt in-process on 127.0.0.1, random port)"
	}
	fmt.Fprintf(&b, "broker %s, MQTT protocol %d, connect timeout %s\n\n", broker, p.Broker.Protocol, p.Broker.ConnectTimeout)

	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "group\tclients\tconnect\tsubscribes\tpublishes\tper client\tgroup total\tdeliveries/msg")
	for gi, gp := range prog.Groups {
		g := &p.Groups[gi]
		connect := "all at once"
		if g.ConnectRate > 0 {
			connect = fmt.Sprintf("%s/s over %s", fmtFloat(g.ConnectRate), fmtDuration(gp.ConnectSpan))
		}
		subs := "-"
		if len(g.Subscribe) > 0 {
			var ss []string
			for _, s := range g.Subscribe {
				ss = append(ss, fmt.Sprintf("%s q%d", s.Topic, s.QoS))
			}
			subs = strings.Join(ss, ", ")
		}
		if g.Respond != nil {
			subs = fmt.Sprintf("respond %s q%d", g.Respond.Topic, g.Respond.QoS)
		}
		pub, per, total, exp := "-", "-", "-", "-"
		if g.Publish != nil && gp.Max {
			pub, per, total, exp = explainClosedGroup(g.Publish, gp)
		}
		if g.Publish != nil && gp.Interval > 0 {
			pub = fmt.Sprintf("%s q%d %s", g.Publish.Topic, g.Publish.QoS, payloadSize(prog, gp))
			rate := float64(time.Second) / float64(gp.Interval)
			per = fmt.Sprintf("%s msg/s", fmtFloat(rate))
			total = fmt.Sprintf("%s msg/s", fmtFloat(rate*float64(gp.Count)))
			exp = fmtFloat(gp.ExpectedPerMessage)
			if len(p.Stages) > 0 {
				per += " peak"
				total += " peak"
			}
			if g.Publish.Arrival == plans.ArrivalPoisson {
				pub += fmt.Sprintf(" (poisson, seed %d)", p.Seed)
			}
			if d := g.Publish.StartDelay; d != nil {
				pub += startDelayNote(prog, gi, d)
			}
			if b := g.Publish.Burst; b != nil {
				pub += fmt.Sprintf(" (bursts of %d every %s)", b.Messages, fmtDuration(b.Every))
				per += " mean"
				total += " mean"
			}
			if g.Publish.Count > 0 {
				pub += fmt.Sprintf(" (%d each)", g.Publish.Count)
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", gp.Name, gp.Count, connect, subs, pub, per, total, exp)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeChurn(&b, prog)
	explainPayloads(&b, prog, l.Now)
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tlength\tconnects/s\tpublishes/s\tdeliveries/s\tout bytes/s\tin bytes/s\tmessages\tdeliveries\t")
	for _, ph := range prog.Phases {
		length := fmtDuration(ph.Length)
		switch ph.Phase {
		case phase.Subscribe, phase.Disconnect:
			length = "as needed"
		case phase.Drain:
			length = "≤ " + fmtDuration(ph.Length)
			if prog.DrainQuiet > 0 {
				// The mapping form: it also ends once quiet.
				length += ", quiet " + fmtDuration(prog.DrainQuiet)
			}
		}
		connects := "-"
		if ph.Connects > 0 {
			if ph.Length > 0 {
				connects = fmtFloat(ph.Rate(int64(ph.Connects)))
			} else {
				connects = fmt.Sprintf("%d at once", ph.Connects)
			}
		}
		dash := func(n int64, rate bool) string {
			if n == 0 {
				return "-"
			}
			if rate {
				return fmtFloat(ph.Rate(n))
			}
			return fmt.Sprint(n)
		}
		cells := [...]string{dash(ph.Messages, true), dash(ph.Deliveries, true), dash(ph.Bytes, true), dash(ph.DeliveredBytes, true),
			dash(ph.Messages, false), dash(ph.Deliveries, false)}
		closedPhaseCells(prog, ph, &cells)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", ph.Phase, length, connects,
			cells[0], cells[1], cells[2], cells[3], cells[4], cells[5])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	explainClosedNote(&b, prog)
	writeRateChart(&b, prog)
	if err := writeRequests(&b, prog); err != nil {
		return err
	}
	if err := writeStages(&b, prog); err != nil {
		return err
	}
	n := ComputeNeeds(prog)
	fmt.Fprintf(&b, "\npeak connections %d\n", n.Connections)
	fds := fmt.Sprintf("file descriptors %d", n.FileDescriptors)
	if p.Broker.IsEmbedded() {
		fds += " (the in-process broker holds the other end of each connection)"
	}
	if l.OpenFiles > 0 {
		fds += fmt.Sprintf(", limit %d", l.OpenFiles)
	}
	fmt.Fprintln(&b, fds)
	ports := fmt.Sprintf("local ports %d per source address and broker", n.PortsPerAddress)
	if l.EphemeralPorts > 0 {
		ports += fmt.Sprintf(", ephemeral range %d", l.EphemeralPorts)
	}
	fmt.Fprintln(&b, ports)
	for _, warn := range n.Warnings(l) {
		fmt.Fprintf(&b, "WARNING: %s\n", warn)
	}
	if len(prog.Thresholds) > 0 {
		b.WriteString("\nthresholds\n")
		for _, th := range prog.Thresholds {
			if th.Builtin {
				fmt.Fprintf(&b, "  %s (built in)\n", th.Source.Expr)
			} else {
				fmt.Fprintf(&b, "  %s\n", th.Source.Expr)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
