package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/plans"
)

// TestExplainStartDelay: explain names a group's start delay range and
// the delays its clients drew from it (the compiled schedules'), or the
// one delay every client waits, and counts the messages the delays leave
// (the schedules' exact counts).
func TestExplainStartDelay(t *testing.T) {
	for _, tc := range []struct {
		name, delay string
		fixed       bool
	}{
		{name: "a range", delay: "{min: 100ms, max: 900ms}"},
		{name: "a fixed delay", delay: "{min: 250ms, max: 250ms}", fixed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := fmt.Sprintf(`name: sd
seed: 3
groups:
  - name: sub
    subscribe: {topic: "t/#"}
  - name: pub
    count: 20
    publish: {topic: t/%%i, every: 100ms, start_delay: %s}
warmup: 0s
duration: 2s
`, tc.delay)
			p, err := plans.LoadBytes("sd.yaml", []byte(plan), plans.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			prog, err := plans.Compile(p, plans.CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			lo, hi, n := time.Duration(1<<62), time.Duration(0), 0
			for _, c := range prog.Clients {
				if c.Publish != nil {
					s := c.Publish.Schedule
					lo, hi = min(lo, s.Delay), max(hi, s.Delay)
					n += s.Messages(0, s.End())
				}
			}
			want := fmt.Sprintf("(start delays %s to %s, drawn from [100ms, 900ms), seed 3)", fmtDuration(lo), fmtDuration(hi))
			if tc.fixed {
				want = "(start delay 250ms)"
			}
			var b bytes.Buffer
			if err := WriteExplain(&b, prog, Limits{}); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if !strings.Contains(out, want) {
				t.Errorf("explain lacks %q:\n%s", want, out)
			}
			if n >= 400 || !strings.Contains(out, fmt.Sprintf(" %d ", n)) {
				t.Errorf("the schedules count %d messages (fewer than 400 without delays); explain:\n%s", n, out)
			}
		})
	}
}
