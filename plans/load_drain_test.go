package plans

import (
	"strings"
	"testing"
	"time"
)

// TestDrainForms: drain is a duration or {max, quiet}, through the file
// and --set alike; bad forms are refused at their position.
func TestDrainForms(t *testing.T) {
	const head = "groups:\n  - {name: pub, publish: {topic: t, every: 1s}}\nduration: 10s\n"
	for _, tc := range []struct {
		name, drain string
		sets        []string
		max, quiet  time.Duration
		err         string // a substring of the error; "" for none
	}{
		{name: "absent: the default", max: defDrain},
		{name: "plain duration", drain: "drain: 2s", max: 2 * time.Second},
		{name: "plain zero", drain: "drain: 0s", max: 0},
		{name: "mapping", drain: "drain: {max: 30s, quiet: 2s}", max: 30 * time.Second, quiet: 2 * time.Second},
		{name: "mapping, quiet by default", drain: "drain: {max: 10s}", max: 10 * time.Second, quiet: time.Second},
		{name: "block mapping", drain: "drain:\n  max: 1m\n  quiet: 500ms", max: time.Minute, quiet: 500 * time.Millisecond},
		{name: "quiet equal to max", drain: "drain: {max: 2s, quiet: 2s}", max: 2 * time.Second, quiet: 2 * time.Second},
		{name: "--set a duration over the mapping", drain: "drain: {max: 30s, quiet: 1s}", sets: []string{"drain=3s"}, max: 3 * time.Second},
		{name: "--set the mapping", sets: []string{"drain={max: 20s, quiet: 3s}"}, max: 20 * time.Second, quiet: 3 * time.Second},
		{name: "--set drain.max on the mapping", drain: "drain: {max: 30s, quiet: 1s}", sets: []string{"drain.max=12s"}, max: 12 * time.Second, quiet: time.Second},
		{name: "--set drain.max alone makes the mapping", sets: []string{"drain.max=12s"}, max: 12 * time.Second, quiet: time.Second},
		{name: "--set drain.max on a duration", drain: "drain: 2s", sets: []string{"drain.max=12s"}, err: `--set: drain.max: cannot set max: drain is "2s", not a mapping: give the mapping form whole, like drain={max: 30s, quiet: 1s}`},
		{name: "quiet above max", drain: "drain: {max: 2s, quiet: 3s}", err: "x.yaml:4:25: drain.quiet: must not be above max (2s)"},
		{name: "max below the default quiet", drain: "drain: {max: 500ms}", err: "x.yaml:4:8: drain: max is 500ms, below the default quiet of 1s"},
		{name: "negative max", drain: "drain: {max: -1s, quiet: 1s}", err: "x.yaml:4:14: drain.max: must not be negative, got -1s"},
		{name: "negative quiet", drain: "drain: {max: 1s, quiet: -1s}", err: "x.yaml:4:25: drain.quiet: must not be negative, got -1s"},
		{name: "zero quiet", drain: "drain: {max: 1s, quiet: 0s}", err: "x.yaml:4:25: drain.quiet: must be more than 0, got 0s"},
		{name: "negative plain", drain: "drain: -1s", err: "x.yaml:4:8: drain: must not be negative, got -1s"},
		{name: "no max", drain: "drain: {quiet: 1s}", err: "x.yaml:4:8: drain: the mapping form needs max"},
		{name: "unknown key", drain: "drain: {max: 2s, quite: 1s}", err: `x.yaml:4:18: drain: unknown key "quite" (did you mean "quiet"?)`},
		{name: "a list", drain: "drain: [2s]", err: "x.yaml:4:8: drain: must be"},
		{name: "over the timeline", drain: "drain: {max: 1000000h}", err: "x.yaml:4:8: drain: warmup + ramp + duration + drain reaches 1000000h0m10s here, more than the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := LoadBytes("x.yaml", []byte(head+tc.drain+"\n"), LoadOptions{Sets: tc.sets})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Drain != tc.max || p.DrainQuiet != tc.quiet {
				t.Fatalf("drain %v quiet %v, want %v and %v", p.Drain, p.DrainQuiet, tc.max, tc.quiet)
			}
			prog, err := Compile(p, CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if prog.Drain != tc.max || prog.DrainQuiet != tc.quiet {
				t.Fatalf("compiled drain %v quiet %v, want %v and %v", prog.Drain, prog.DrainQuiet, tc.max, tc.quiet)
			}
		})
	}
}
