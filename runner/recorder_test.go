package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/mqplan/mqplan/phase"
)

// TestLostSoFar drives the recorder's due accounting directly: group 1
// publishes, each message implying two deliveries to group 0, and every
// snapshot reads the deliveries lost so far. A message within its
// allowance is never lost yet, one past it is until its delivery comes, a
// message never sent is lost at once, a duplicate or another process's
// message takes nothing back, and the run's last snapshot counts every
// message, agreeing with merge().
func TestLostSoFar(t *testing.T) {
	const sec = int64(time.Second)
	type op int
	const (
		send    op = iota // a message intended at t, sent
		unsent            // t messages never sent
		recv              // a first delivery of the message intended at t
		dup               // a repeated delivery of it
		foreign           // another process's message stamped t
		snap              // a snapshot at t; want is group 0's lost so far
		end               // the run's last snapshot
	)
	type step struct {
		op   op
		t    int64
		want int64
	}
	tests := []struct {
		name      string
		allowance time.Duration
		steps     []step
	}{
		{name: "in flight is not lost, past the allowance it is", allowance: 2 * time.Second, steps: []step{
			{op: send, t: sec / 2},
			{op: snap, t: 1 * sec, want: 0},
			// 2s after the send, but its second is not all 2s ago.
			{op: snap, t: 2*sec + sec/2, want: 0},
			{op: snap, t: 3 * sec, want: 2},
			// A late delivery takes itself back; a duplicate does not.
			{op: recv, t: sec / 2}, {op: snap, t: 3*sec + 1, want: 1},
			{op: dup, t: sec / 2}, {op: snap, t: 4 * sec, want: 1},
			{op: end, want: 1},
		}},
		{name: "delivered in time is never lost", allowance: time.Second, steps: []step{
			{op: send, t: 0}, {op: recv, t: 0}, {op: recv, t: 0},
			{op: send, t: 3 * sec}, {op: recv, t: 3 * sec},
			{op: snap, t: 2 * sec, want: 0},
			{op: snap, t: 10 * sec, want: 1},
			{op: end, want: 1},
		}},
		{name: "a message never sent is lost at once", allowance: 5 * time.Second, steps: []step{
			{op: unsent, t: 3}, {op: snap, t: 1 * sec, want: 6},
			{op: end, want: 6},
		}},
		{name: "the run's end counts what is still within its allowance", allowance: time.Minute, steps: []step{
			{op: send, t: 10 * sec}, {op: recv, t: 10 * sec},
			{op: snap, t: 20 * sec, want: 0},
			{op: end, want: 1},
		}},
		{name: "another process's deliveries take nothing back", allowance: time.Second, steps: []step{
			// (merge() counts them received: a run has them only when it
			// has no publishers, so nothing expected either.)
			{op: send, t: 0}, {op: foreign, t: 0}, {op: snap, t: 5 * sec, want: 2},
		}},
		{name: "a long allowance is kept in wider slots", allowance: 10 * time.Minute, steps: []step{
			{op: send, t: 0}, {op: send, t: 5 * 60 * sec},
			{op: snap, t: 9 * 60 * sec, want: 0},
			{op: snap, t: 11 * 60 * sec, want: 2},
			{op: end, want: 4},
		}},
		{name: "an allowance under a second is a second", allowance: 0, steps: []step{
			{op: send, t: 0},
			{op: snap, t: sec + sec/2, want: 0},
			{op: snap, t: 2 * sec, want: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder(2, tt.allowance)
			sc := newSecondScratch(2)
			expectedBy := []int{2, 0}
			var lost []int64
			hooks := secondHooks{lost: func(g int, n int64) { lost = append(lost, n) }}
			for i, s := range tt.steps {
				switch s.op {
				case send:
					r.recordSend(1, &sendRecord{phase: phase.Steady, group: 1, expected: 2, expectedBy: expectedBy, intended: s.t})
				case unsent:
					r.recordUnsent(1, phase.Steady, 1, s.t, 2, expectedBy)
				case recv, dup, foreign:
					at := s.t + int64(time.Millisecond)
					d := &recvRecord{phase: phase.Steady, group: 0, pubGroup: 1, kind: deliveryFirst,
						at: time.Duration(at), latency: time.Duration(at - s.t), scheduled: s.op != foreign}
					if s.op == dup {
						d.kind = deliveryDuplicate
					}
					r.recordReceive(0, d)
				case snap, end:
					lost = lost[:0]
					r.second(sc, hooks, r.matured(s.t, s.op == end))
					if !slices.Equal(lost, []int64{s.want, 0}) {
						t.Errorf("step %d, snapshot at %v: lost so far %v, want [%d 0]", i, time.Duration(s.t), lost, s.want)
					}
				}
				if s.op != end {
					continue
				}
				var merged int64
				for _, p := range r.merge() {
					merged += p.Groups[0].Lost
				}
				if merged != s.want {
					t.Errorf("merge() counts %d lost, the last snapshot %d", merged, s.want)
				}
			}
		})
	}
}
