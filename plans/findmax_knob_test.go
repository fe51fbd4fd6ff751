package plans

import (
	"strings"
	"testing"
)

const knobPlan = `
broker: {url: embedded}
groups:
  - name: sub
    count: 10
    subscribe: {topic: "t/#"}
  - name: pub
    count: 10
    publish: {topic: "t/%i", every: 100ms}
  - name: rated
    count: 4
    publish: {topic: "r/%i", rate: 50/s}
  - name: counted
    count: 2
    publish: {topic: "c/%i", every: 1s, count: 5}
  - name: maxed
    count: 2
    publish: {topic: "m/%i", qos: 1, rate: max}
duration: 5s
`

func TestKnob(t *testing.T) {
	p, err := LoadBytes("k.yaml", []byte(knobPlan), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, knob string
		want       string  // the knob's String, or a part of the error
		value      float64 // its value in the plan
		set        float64 // a value to set ...
		sets       string  // ... and the --set it gives
		wantErr    bool
	}{
		{name: "default is the first publisher's rate", knob: "", want: "groups.pub.rate", value: 100, set: 250, sets: "groups[1].publish.every=40000000ns"},
		{name: "rate written as rate", knob: "groups.rated.rate", want: "groups.rated.rate", value: 50, set: 12.5, sets: "groups[2].publish.rate=12.5/s"},
		{name: "count", knob: "groups.sub.count", want: "groups.sub.count", value: 10, set: 17.9, sets: "groups[0].count=17"},
		{name: "clients is count", knob: "groups.pub.clients", want: "groups.pub.count", value: 10, set: 3, sets: "groups[1].count=3"},
		{name: "unknown group", knob: "groups.pbu.rate", want: `no group named "pbu" (groups: sub, pub, rated, counted, maxed); did you mean "pub"?`, wantErr: true},
		{name: "unknown property", knob: "groups.pub.rat", want: "did you mean groups.pub.rate?", wantErr: true},
		{name: "not a group path", knob: "duration", want: "want groups.<name>.rate or groups.<name>.count", wantErr: true},
		{name: "subscriber has no rate", knob: "groups.sub.rate", want: `group "sub" does not publish`, wantErr: true},
		{name: "closed loop has no rate", knob: "groups.maxed.rate", want: `group "maxed" publishes with rate: max`, wantErr: true},
		{name: "closed loop's count is a knob", knob: "groups.maxed.count", want: "groups.maxed.count", value: 2, set: 5, sets: "groups[4].count=5"},
		{name: "publish count refused", knob: "groups.counted.rate", want: "publish.count 5", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseKnob(tt.knob, p)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want one containing %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if k.String() != tt.want {
				t.Errorf("knob %s, want %s", k, tt.want)
			}
			if v := k.Value(p); v != tt.value {
				t.Errorf("value %v, want %v", v, tt.value)
			}
			sets := k.Sets(p, tt.set)
			if len(sets) != 1 || sets[0] != tt.sets {
				t.Fatalf("sets %q, want %q", sets, tt.sets)
			}
			// The override loads, and gives the knob the value set.
			q, err := LoadBytes("k.yaml", []byte(knobPlan), LoadOptions{Sets: sets})
			if err != nil {
				t.Fatal(err)
			}
			want := tt.set
			if k.Count {
				want = float64(int(tt.set))
			}
			if got := k.Value(q); got != want {
				t.Errorf("after %s the knob is %v, want %v", sets[0], got, want)
			}
		})
	}
}

// TestKnobSetsOutOfRange: a value whose interval or client count does not
// fit in an int64 must not wrap around. A tiny rate on a group written
// with every gave every=1ns (the conversion's overflow clamped to 1ns), so
// find-max's lowest trial published as fast as it could; a huge count
// gave a negative one.
func TestKnobSetsOutOfRange(t *testing.T) {
	p, err := LoadBytes("k.yaml", []byte(knobPlan), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, knob string
		set        float64
		sets       string
	}{
		{name: "tiny rate on every", knob: "groups.pub.rate", set: 1e-9, sets: "groups[1].publish.every=9223372036854775807ns"},
		{name: "tinier rate on every", knob: "groups.pub.rate", set: 1e-300, sets: "groups[1].publish.every=9223372036854775807ns"},
		{name: "rate just in range", knob: "groups.pub.rate", set: 10, sets: "groups[1].publish.every=1000000000ns"},
		{name: "huge count", knob: "groups.sub.count", set: 1e30, sets: "groups[0].count=9223372036854775807"},
		{name: "count at float int64 edge", knob: "groups.sub.count", set: 9.3e18, sets: "groups[0].count=9223372036854775807"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseKnob(tt.knob, p)
			if err != nil {
				t.Fatal(err)
			}
			sets := k.Sets(p, tt.set)
			if len(sets) != 1 || sets[0] != tt.sets {
				t.Fatalf("sets %q, want %q", sets, tt.sets)
			}
		})
	}
}
