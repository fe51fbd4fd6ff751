package report

import (
	"testing"
	"time"
)

func TestSuggestDrain(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name       string
		drain      time.Duration
		late, rate int64
		latency    time.Duration
		plain, max time.Duration
	}{
		{name: "3 s delay, 2 s drain, a second behind", drain: 2 * s, late: 200, rate: 200, latency: 3 * s, plain: 6 * s, max: 30 * s},
		{name: "the rate decides", drain: 2 * s, late: 1000, rate: 100, latency: 500 * time.Millisecond, plain: 24 * s, max: 50 * s},
		{name: "rounded up to a whole second", drain: 1 * s, late: 10, rate: 100, latency: 0, plain: 3 * s, max: 30 * s},
		{name: "the latency decides", drain: 500 * time.Millisecond, late: 1, rate: 1000, latency: 15 * s, plain: 30 * s, max: 60 * s},
		{name: "no rate: the latency alone", drain: 0, late: 50, rate: 0, latency: 2500 * time.Millisecond, plain: 5 * s, max: 30 * s},
		{name: "no rate, no latency: a second", drain: 0, late: 50, rate: 0, latency: 0, plain: 2 * s, max: 30 * s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain, most := suggestDrain(tc.drain, tc.late, tc.rate, tc.latency)
			if plain != tc.plain || most != tc.max {
				t.Fatalf("drain %v, {max: %v}; want %v and %v", plain, most, tc.plain, tc.max)
			}
		})
	}
}

func TestFmtWhole(t *testing.T) {
	for in, want := range map[time.Duration]string{
		6 * time.Second: "6s", time.Minute: "1m", 90 * time.Second: "1m30s", 2 * time.Hour: "2h", 90 * time.Minute: "1h30m",
	} {
		if got := fmtWhole(in); got != want {
			t.Errorf("fmtWhole(%v) = %q, want %q", in, got, want)
		}
	}
}
