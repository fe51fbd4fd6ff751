package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/plans"
)

// TestStageOverlapAndMisjudgedCopies: a subscriber whose two filters both
// match a topic, on a broker that sends one copy per client (the embedded
// broker) and duplicates on purpose. Its repeats are first taken for
// overlap copies and settled as duplicates when the run is over; each
// stage must count them as its messages' duplicates as the run does, or
// stages.<name>.dup_rate == 0 would pass while the broker duplicated.
// Without faults, the stages have no duplicates and no copies.
func TestStageOverlapAndMisjudgedCopies(t *testing.T) {
	const yaml = `name: overlap-stages
broker: {url: embedded, protocol: 5}
groups:
  - name: sub
    subscribe:
      - {topic: "d/#", qos: 1}
      - {topic: "d/+", qos: 1}
  - name: pub
    publish: {topic: "d/%i", qos: 1, size: 20B}
stages:
  - {name: a, duration: 1s, rate: 40/s}
  - {name: b, duration: 1s, rate: 40/s}
drain: 1s
`
	for _, tc := range []struct {
		name   string
		faults broker.Faults
	}{
		{"no faults", broker.Faults{}},
		{"one delivery in 10 duplicated", broker.Faults{DuplicateEvery: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.yaml")
			if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			p, err := plans.Load(path, plans.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			prog := compile(t, p)
			st, b := runWith(t, prog, broker.Options{Faults: tc.faults}, Options{})
			if st.Incomplete != "" || st.Interrupted {
				t.Fatalf("incomplete: %q interrupted=%v", st.Incomplete, st.Interrupted)
			}
			m := all(st)
			var sum struct{ dups, recv, copies, lost int64 }
			for i := range st.Stages {
				s := &st.Stages[i].Metrics
				sum.dups += s.Duplicates
				sum.recv += s.Received
				sum.copies += s.OverlapCopies
				sum.lost += s.Lost
				if s.Duplicates > 0 && s.Received-s.Duplicates != s.Expected {
					t.Errorf("stage %s: received %d dups %d expected %d", st.Stages[i].Name, s.Received, s.Duplicates, s.Expected)
				}
			}
			if tc.faults.DuplicateEvery > 0 && (m.Duplicates == 0 || b.FaultCounts().Duplicated == 0) {
				t.Fatalf("the run counted %d duplicates, the broker made %d", m.Duplicates, b.FaultCounts().Duplicated)
			}
			if sum.dups != m.Duplicates || sum.recv != m.Received || sum.copies != m.OverlapCopies || sum.lost != m.Lost {
				t.Errorf("stages sum to dups %d received %d copies %d lost %d; the run: dups %d received %d copies %d lost %d",
					sum.dups, sum.recv, sum.copies, sum.lost, m.Duplicates, m.Received, m.OverlapCopies, m.Lost)
			}
		})
	}
}
