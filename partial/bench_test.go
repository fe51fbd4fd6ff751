package partial

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

// spread is a histogram of n latencies spread log-normally around
// median µs, as a busy run's are: many distinct buckets filled.
func spread(rng *rand.Rand, n int, median float64) *hdrhistogram.Histogram {
	h := stats.NewHistogram()
	for range n {
		_ = h.RecordValue(min(stats.HistogramMax, max(1, int64(median*math.Exp(rng.NormFloat64())))))
	}
	return h
}

// bigPart is one of n shards' partial of the XMeter seed shape at full
// size (100k clients: 50k publishers → 50k subscribers, 1-to-1, QoS 1,
// 2 msg/s each) over a 330-second run: every phase's cells with their
// five histograms, and a timeline second per second with its latency
// histogram. A partial's size grows with groups, phases and seconds,
// not with clients.
func bigPart(b *testing.B, i, n int) []byte {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	const seconds = 330
	st := &stats.Stats{Started: time.Unix(1000, 0), Elapsed: seconds * time.Second,
		Groups: []stats.GroupInfo{{Name: "sub", Clients: 50000 / n}, {Name: "pub", Clients: 50000 / n}}}
	st.Phases = make([]stats.PhaseStats, phase.Count)
	for k, p := range phase.All {
		ps := stats.PhaseStats{Phase: p, Start: time.Duration(k) * time.Minute, End: time.Duration(k+1) * time.Minute, Groups: make([]stats.Metrics, 2)}
		msgs := int64(100000 * 60 / n)
		ps.Groups[0] = stats.Metrics{Expected: msgs, Received: msgs, ReceivedBytes: msgs * 1000, Latency: spread(rng, 20000, 2000),
			Connect: spread(rng, 2000, 500), Subscribe: spread(rng, 2000, 300), ConnectOK: 25000 / int64(n)}
		ps.Groups[1] = stats.Metrics{Sent: msgs, Acked: msgs, SentBytes: msgs * 1000, ExpectedOwn: msgs, ReceivedOwn: msgs,
			Ack: spread(rng, 20000, 1500), Lag: spread(rng, 20000, 50), Connect: spread(rng, 2000, 500), ConnectOK: 25000 / int64(n)}
		st.Phases[k] = ps
	}
	c := NewCollector()
	for s := range seconds {
		sec := stats.Second{At: time.Duration(s+1) * time.Second, Phase: phase.Steady, Sent: 100000 / int64(n), Received: 100000 / int64(n),
			Groups: []stats.GroupSecond{{Group: "sub", Received: 100000 / int64(n)}, {Group: "pub", Sent: 100000 / int64(n)}}}
		c.Latency(0, spread(rng, 2000, 2000))
		c.Second(sec)
		st.Timeline = append(st.Timeline, sec)
	}
	f, err := FromStats(st, c, Meta{RunID: "r", Plan: PlanSource{File: "xmeter-100k.yaml", Source: "name: x\n"}, Shard: Shard{Index: i, Count: n}})
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, f); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkMerge8 reads and merges the 8 partials of a 100k-client run
// (issue 11's target: under a second).
func BenchmarkMerge8(b *testing.B) {
	const n = 8
	parts := make([][]byte, n)
	size := 0
	for i := range n {
		parts[i] = bigPart(b, i, n)
		size += len(parts[i])
	}
	b.ResetTimer()
	for b.Loop() {
		files := make([]*File, n)
		for i, p := range parts {
			f, err := Parse("part", p)
			if err != nil {
				b.Fatal(err)
			}
			files[i] = f
		}
		if _, err := Merge(files, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size)/n/1024, "KiB/part")
}
