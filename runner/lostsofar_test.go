package runner

import (
	"sync"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

// TestLostSoFarDuringOutage: when the publishers lose the broker in the
// middle of the steady phase (kicked, or the broker gone altogether) and
// do not come back, the messages their schedules still call for are
// never sent. The deliveries they imply count as lost so far while the
// run goes, once past the allowance like any other, not only when
// publishing is over; when the run is over the figure is the run's lost
// deliveries exactly (nothing counted twice).
func TestLostSoFarDuringOutage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// outage cuts the publishers off the broker, on the snapshot
		// goroutine.
		outage func(b *broker.Broker)
	}{
		{"publishers kicked", func(b *broker.Broker) { b.Kick("-pub-") }},
		{"broker closed", func(b *broker.Broker) { go func() { _ = b.Close(5 * time.Second) }() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const pubs = 2
			prog := compile(t, e2ePlan(pubs, 0, 6*time.Second))
			prog.Drain = time.Second // the allowance: a second
			var (
				mu      sync.Mutex
				b       *broker.Broker
				once    sync.Once
				lost    = map[int]int64{} // this second's lost so far, by group
				seen    []int64           // the sub group's, each second
				outAt   = -1              // the second in which the outage came
				seconds []stats.Second
			)
			o := Options{
				LostSoFar: func(g int, n int64) {
					mu.Lock()
					defer mu.Unlock()
					lost[g] = n
				},
				Second: func(s stats.Second) {
					mu.Lock()
					defer mu.Unlock()
					seen = append(seen, lost[0])
					seconds = append(seconds, s)
					if s.Phase == phase.Steady {
						once.Do(func() {
							outAt = len(seen) - 1
							tt.outage(b)
						})
					}
				},
			}
			st, _ := runWith(t, prog, broker.Options{}, o, func(br *broker.Broker) { b = br })
			mu.Lock()
			defer mu.Unlock()
			if outAt < 0 {
				t.Fatalf("no steady second: %d seconds", len(seen))
			}
			var want, unsent int64
			for p := range st.Phases {
				want += st.Phases[p].Groups[0].Lost
				unsent += st.Phases[p].Groups[1].Unsent
			}
			// Messages the publishers would have sent over the rest of
			// the steady phase: at least a few seconds' worth.
			if perSecond := int64(pubs * 50); unsent < 2*perSecond {
				t.Fatalf("unsent %d, want the publishers cut off for seconds (errors %v)", unsent, st.ErrorSamples)
			}
			if got := seen[len(seen)-1]; got != want {
				t.Errorf("lost so far when the run is over = %d, the run lost %d", got, want)
			}
			// While the run goes, the skipped messages show: in some
			// second before the last, at least a second's worth of
			// deliveries (100) is counted lost, never more than the run
			// lost in all.
			var most int64
			for i, n := range seen[:len(seen)-1] {
				if n > want {
					t.Errorf("second %d: lost so far %d, more than the run's %d", i, n, want)
				}
				most = max(most, n)
			}
			if most < pubs*50 {
				t.Errorf("lost so far before the run was over reached %d (each second: %v), want at least %d of the %d lost; outage in second %d",
					most, seen, pubs*50, want, outAt)
			}
			t.Logf("lost so far each second: %v; outage in second %d; the run lost %d (%d unsent)", seen, outAt, want, unsent)
		})
	}
}
