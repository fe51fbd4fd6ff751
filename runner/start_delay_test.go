package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/plans"
)

// TestRunStartDelay runs publishers with publish.start_delay on the
// embedded broker and checks from the broker's side that each client sent
// exactly the messages its delayed schedule has (so explain's counts are
// the run's), at their scheduled times relative to one another: within a
// client, message k intended At(k) − At(0) after its first, and across
// clients, their first messages as far apart as their drawn delays.
func TestRunStartDelay(t *testing.T) {
	for _, tc := range []struct{ name, publish string }{
		{"uniform", "every: 50ms, start_delay: {min: 100ms, max: 1s}"},
		{"poisson", "every: 20ms, arrival: poisson, start_delay: {min: 100ms, max: 1s}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := `name: sd
groups:
  - name: sub
    subscribe: {topic: "sd/#", qos: 1}
  - name: pub
    count: 8
    publish: {topic: sd/%i, qos: 1, size: 32, PUBLISH}
warmup: 200ms
duration: 1500ms
drain: 3s
`
			p, err := plans.LoadBytes("sd.yaml", []byte(strings.Replace(plan, "PUBLISH", tc.publish, 1)), plans.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			prog := compile(t, p)
			st, truth := runTruth(t, prog)
			truth.mu.Lock()
			defer truth.mu.Unlock()
			perClient := map[uint32]int{}
			var ref *plans.Client
			var refFirst int64
			for key, intended := range truth.seen {
				c := &prog.Clients[key.pub]
				s := c.Publish.Schedule
				k := int(key.seq) - 1
				at, ok := s.At(k)
				if !ok {
					t.Fatalf("the broker received message %d of %s, which its schedule does not have", k, c)
				}
				perClient[key.pub]++
				first, ok := truth.seen[msgKey{key.pub, 1}]
				if !ok {
					t.Fatalf("the broker never received the first message of %s", c)
				}
				at0, _ := s.At(0)
				if intended-first != int64(at-at0) {
					t.Errorf("%s message %d intended %v after its first, the schedule says %v", c, k, time.Duration(intended-first), at-at0)
				}
				if ref == nil {
					ref, refFirst = c, first
				}
				refAt0, _ := ref.Publish.Schedule.At(0)
				if first-refFirst != int64(at0-refAt0) {
					t.Errorf("%s starts %v after %s, their schedules say %v (delays %v and %v)", c, time.Duration(first-refFirst), ref, at0-refAt0, s.Delay, ref.Publish.Schedule.Delay)
				}
			}
			for i := range prog.Clients {
				c := &prog.Clients[i]
				if c.Publish == nil {
					continue
				}
				if d := c.Publish.Schedule.Delay; d < 100*time.Millisecond || d >= time.Second {
					t.Errorf("%s: delay %v", c, d)
				}
				if want := c.Publish.Schedule.Messages(0, c.Publish.Schedule.End()); perClient[uint32(c.Index)] != want {
					t.Errorf("%s: the broker received %d, its schedule has %d", c, perClient[uint32(c.Index)], want)
				}
			}
			m := all(st)
			if want := planned(prog); m.Sent != want || m.Received != want || int64(len(truth.seen)) != want || m.Lost != 0 || m.Unsent != 0 {
				t.Errorf("sent %d received %d broker %d lost %d unsent %d, want %d", m.Sent, m.Received, len(truth.seen), m.Lost, m.Unsent, want)
			}
		})
	}
}
