package plans

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

const startDelayPlan = `name: sd
seed: 3
groups:
  - name: sub
    subscribe: {topic: "t/#", qos: 1}
  - name: pub
    count: 20
    publish: {topic: t/%i, every: 100ms, PUBLISH}
warmup: 0s
duration: 2s
`

func loadStartDelay(t *testing.T, publish string, sets ...string) (*Plan, error) {
	t.Helper()
	return LoadBytes("sd.yaml", []byte(strings.Replace(startDelayPlan, "PUBLISH", publish, 1)), LoadOptions{Sets: sets})
}

// TestStartDelayLoad: the forms start_delay takes, and its errors, each
// positioned at the key or value at fault.
func TestStartDelayLoad(t *testing.T) {
	for _, tc := range []struct {
		name, publish string
		want          *StartDelay
		err           string
	}{
		{name: "a range", publish: "start_delay: {min: 100ms, max: 500ms}", want: &StartDelay{Min: 100 * time.Millisecond, Max: 500 * time.Millisecond}},
		{name: "min defaults to 0", publish: "start_delay: {max: 1s}", want: &StartDelay{Max: time.Second}},
		{name: "a fixed delay", publish: "start_delay: {min: 1s, max: 1s}", want: &StartDelay{Min: time.Second, Max: time.Second}},
		{name: "with poisson", publish: "arrival: poisson, start_delay: {max: 1s}", want: &StartDelay{Max: time.Second}},
		{name: "max missing", publish: "start_delay: {min: 1s}", err: `sd.yaml:8:55: groups[1].publish.start_delay: missing "max"`},
		{name: "max below min", publish: "start_delay: {min: 2s, max: 1s}", err: "sd.yaml:8:70: groups[1].publish.start_delay.max: must be at least min (2s), got 1s"},
		{name: "negative", publish: "start_delay: {min: -1s, max: 1s}", err: "groups[1].publish.start_delay.min: must not be negative"},
		{name: "a scalar", publish: "start_delay: 1s", err: "groups[1].publish.start_delay: must be a mapping like {min: 0s, max: 5s}, got"},
		{name: "an unknown key", publish: "start_delay: {max: 1s, mx: 2s}", err: `(did you mean "max"?)`},
		{name: "not with rate: max", publish: "start_delay: {max: 1s}, rate: max", err: "groups[1].publish.start_delay: not with rate: max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			publish := tc.publish
			if strings.Contains(publish, "rate: max") {
				publish = strings.Replace(startDelayPlan, "every: 100ms, PUBLISH", publish, 1)
				_, err := LoadBytes("sd.yaml", []byte(publish), LoadOptions{})
				checkStartDelayErr(t, err, tc.err)
				return
			}
			p, err := loadStartDelay(t, publish)
			if tc.err != "" {
				checkStartDelayErr(t, err, tc.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := p.Groups[1].Publish.StartDelay
			if got == nil || got.Min != tc.want.Min || got.Max != tc.want.Max {
				t.Errorf("start_delay %+v, want %+v", got, tc.want)
			}
		})
	}
	// Burst: its own plan (burst takes the place of every).
	_, err := LoadBytes("sd.yaml", []byte(strings.Replace(startDelayPlan, "every: 100ms, PUBLISH", "burst: {every: 1s, messages: 20}, start_delay: {max: 1s}", 1)), LoadOptions{})
	checkStartDelayErr(t, err, "groups[1].publish.start_delay: not with burst")
}

func checkStartDelayErr(t *testing.T, err error, want string) {
	t.Helper()
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("got %v, want a plan error containing %q", err, want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
}

// TestStartDelaySchedules: each client's delay is drawn in [min, max) from
// (seed, client) alone; its messages are the undelayed ones moved by it
// (no stagger), and those moved past the end are gone; Messages counts
// exactly what a walk over At finds, for uniform and Poisson arrivals.
func TestStartDelaySchedules(t *testing.T) {
	for _, tc := range []struct {
		name, publish string
	}{
		{"uniform", "start_delay: {min: 100ms, max: 900ms}"},
		{"poisson", "start_delay: {min: 100ms, max: 900ms}, arrival: poisson"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := loadStartDelay(t, tc.publish)
			if err != nil {
				t.Fatal(err)
			}
			prog, err := Compile(p, CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p2, _ := loadStartDelay(t, tc.publish, "seed=4")
			prog2, err := Compile(p2, CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			distinct := map[time.Duration]bool{}
			same := 0
			for i := range prog.Clients {
				c := &prog.Clients[i]
				if c.Publish == nil {
					continue
				}
				s := c.Publish.Schedule
				d := s.Delay
				if d < 100*time.Millisecond || d >= 900*time.Millisecond {
					t.Errorf("%s: delay %v outside [100ms, 900ms)", c, d)
				}
				if d != p.Groups[1].Publish.StartDelay.Draw(3, c.Index) {
					t.Errorf("%s: delay %v is not the draw of (seed, index)", c, d)
				}
				if prog2.Clients[i].Publish.Schedule.Delay == d {
					same++
				}
				distinct[d] = true
				if s.Phase != 0 {
					t.Errorf("%s: phase %v: the delay replaces the stagger", c, s.Phase)
				}
				undelayed := s
				undelayed.Delay = 0
				n := 0
				for k := 0; ; k++ {
					at, ok := s.At(k)
					if !ok {
						break
					}
					n++
					u, _ := undelayed.At(k)
					if at != u+d && at != u+d+1 && at != u+d-1 { // the float sum rounds once
						t.Fatalf("%s: At(%d) = %v, undelayed %v + delay %v", c, k, at, u, d)
					}
				}
				if all := undelayed.Messages(0, s.End()); n >= all && d > 0 && !s.Poisson {
					t.Errorf("%s: %d messages delayed, %d without: the delay must push some past the end", c, n, all)
				}
				for _, w := range [][2]time.Duration{{0, d}, {0, d + 1}, {d, d + 300*time.Millisecond}, {500 * time.Millisecond, s.End()}, {0, s.End() + time.Hour}} {
					want := 0
					for k := 0; ; k++ {
						at, ok := s.At(k)
						if !ok {
							break
						}
						if at >= w[0] && at < w[1] {
							want++
						}
					}
					if got := s.Messages(w[0], w[1]); got != want {
						t.Errorf("%s: Messages(%v, %v) = %d, the walk finds %d", c, w[0], w[1], got, want)
					}
				}
				if got := s.Messages(0, d); got != 0 {
					t.Errorf("%s: %d messages before its delay %v", c, got, d)
				}
				cur := s.Cursor()
				for k := 0; k < n+2; k++ {
					a, aok := cur.At(k)
					b, bok := s.At(k)
					if a != b || aok != bok {
						t.Fatalf("%s: cursor At(%d) = %v %v, Schedule.At %v %v", c, k, a, aok, b, bok)
					}
				}
			}
			if len(distinct) < 15 {
				t.Errorf("%d distinct delays over 20 clients", len(distinct))
			}
			if same > 2 {
				t.Errorf("seeds 3 and 4 give %d clients the same delay", same)
			}
		})
	}
}

// TestStartDelayDraw: the draws are uniform over [min, max) (a
// Kolmogorov–Smirnov test at α = 10⁻⁶), and min when max equals it.
func TestStartDelayDraw(t *testing.T) {
	d := &StartDelay{Min: time.Second, Max: 3 * time.Second}
	const n = 20000
	xs := make([]float64, n)
	for i := range xs {
		x := d.Draw(9, i)
		if x < d.Min || x >= d.Max {
			t.Fatalf("client %d: %v outside [1s, 3s)", i, x)
		}
		// As Exp(1) for ksExp: −log(1 − U) of a uniform U is Exp(1).
		u := float64(x-d.Min) / float64(d.Max-d.Min)
		xs[i] = -math.Log1p(-u)
	}
	if ks, crit := ksExp(xs); ks > crit {
		t.Errorf("KS statistic %v over the critical value %v", ks, crit)
	}
	fixed := &StartDelay{Min: time.Second, Max: time.Second}
	if got := fixed.Draw(9, 1); got != time.Second {
		t.Errorf("fixed delay drew %v", got)
	}
}
