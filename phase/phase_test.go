package phase

import "testing"

// TestNamesRoundTrip checks that every phase parses back from its name and
// that the order is the documented timeline.
func TestNamesRoundTrip(t *testing.T) {
	want := []string{"connect", "subscribe", "warmup", "ramp", "steady", "drain", "disconnect"}
	for i, p := range All {
		if int(p) != i {
			t.Errorf("All[%d] = %d: the constants must be dense and ordered", i, p)
		}
		if p.String() != want[i] {
			t.Errorf("%d.String() = %q, want %q", p, p.String(), want[i])
		}
		if q, ok := Parse(want[i]); !ok || q != p {
			t.Errorf("Parse(%q) = %v, %v; want %v", want[i], q, ok, p)
		}
	}
	if _, ok := Parse("Steady"); ok {
		t.Error(`Parse("Steady") succeeded: names are case-sensitive`)
	}
	if got := Phase(12).String(); got != "phase(12)" {
		t.Errorf("Phase(12).String() = %q", got)
	}
}

// TestPublishing checks which phases the schedule sends in.
func TestPublishing(t *testing.T) {
	for _, tc := range []struct {
		p    Phase
		want bool
	}{{Connect, false}, {Subscribe, false}, {Warmup, true}, {Ramp, true}, {Steady, true}, {Drain, false}, {Disconnect, false}} {
		if got := tc.p.Publishing(); got != tc.want {
			t.Errorf("%v.Publishing() = %v, want %v", tc.p, got, tc.want)
		}
	}
}
