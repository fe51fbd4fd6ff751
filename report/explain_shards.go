package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/mqplan/mqplan/plans"
)

// WriteShards prints how a run of prog split over a.Shards processes
// divides it (mqplan explain --shards N): per shard its clients by group,
// its publish and delivery rates at the target rate, its planned messages
// and deliveries, and the file descriptors and local ports it needs
// against the limits of this machine; then the share of deliveries whose
// publisher and receiver are on different shards (their latency spans two
// clocks), and the assignment's version and hash that every shard must
// agree on.
func WriteShards(w io.Writer, prog *plans.Program, a *plans.Assignment, l Limits) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nshards %d, assignment %s, sha256 %s\n", a.Shards, a.Version, a.Hash)
	fmt.Fprintf(&b, "  %s clients in %s %s", thousandsI64(int64(len(prog.Clients))), thousandsI64(int64(a.Units)), plural(a.Units, "unit"))
	if a.Strategy == plans.ShardingAuto {
		b.WriteString(" (a unit keeps publishers with the clients they reach, and share groups, together)")
	}
	if a.Split > 0 {
		fmt.Fprintf(&b, ", %d too big for one shard and striped", a.Split)
	}
	b.WriteString("\n")
	var total int64
	for _, d := range a.Deliveries {
		total += d
	}
	if total > 0 {
		fmt.Fprintf(&b, "  deliveries across shards, their latency on two clocks: %s of %s planned (%s %%)\n",
			thousandsI64(a.CrossDeliveries), thousandsI64(total), fmtFloat(shareOf(a.CrossDeliveries, total)))
	}

	sent, received := a.PeakRates(prog)
	needs := shardNeeds(prog, a.Shard, a.Shards)
	byGroup := make([][]int, a.Shards)
	for s := range byGroup {
		byGroup[s] = make([]int, len(prog.Groups))
	}
	for i := range prog.Clients {
		byGroup[a.Shard[i]][prog.Clients[i].Group]++
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shard\tclients\tpublishes/s\tdeliveries/s\tmessages\tdeliveries\tfds\tlocal ports\t by group\t")
	for s := 0; s < a.Shards; s++ {
		var groups []string
		for gi, k := range byGroup[s] {
			if k > 0 {
				groups = append(groups, fmt.Sprintf("%s %d", prog.Groups[gi].Name, k))
			}
		}
		n := needs[s]
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t %s\t\n", s, n.Connections,
			fmtFloat(roundRate(sent[s])), fmtFloat(roundRate(received[s])), a.Sends[s], a.Deliveries[s],
			n.FileDescriptors, n.PortsPerAddress, strings.Join(groups, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if prog.Plan.Broker.IsEmbedded() {
		fmt.Fprintf(&b, "the embedded broker runs in one process and holds the other end of all %s connections: give the shards a broker they all reach (--broker)\n", thousandsI64(int64(len(prog.Clients))))
	}
	for s, n := range needs {
		for _, warn := range n.warnings(l, "use more shards") {
			fmt.Fprintf(&b, "WARNING: shard %d %s\n", s, warn)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shareOf is 100·part/whole, to a hundredth.
func shareOf(part, whole int64) float64 {
	return math.Round(float64(part)/float64(whole)*10000) / 100
}

// roundRate rounds a rate to a thousandth, as Program.PeakRate, so that
// sums of per-client rates print the same on every machine.
func roundRate(r float64) float64 {
	return float64(int64(r*1000+0.5)) / 1000
}
