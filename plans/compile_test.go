package plans

import (
	"math"
	"testing"
	"time"
)

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

func TestScheduleAt(t *testing.T) {
	tests := []struct {
		name string
		s    Schedule
		want []time.Duration // every intended offset, in order
	}{
		{
			// The plainest schedule: 4 messages in 2 s, at 0, 0.5, 1, 1.5 s.
			name: "steady only",
			s:    Schedule{Interval: 500 * time.Millisecond, Steady: 2 * time.Second},
			want: []time.Duration{0, ms(500), ms(1000), ms(1500)},
		},
		{
			// Phase 0.5 shifts every message by half an interval; 1.75 s
			// is still inside the 2 s window.
			name: "staggered half an interval",
			s:    Schedule{Interval: 500 * time.Millisecond, Phase: 0.5, Steady: 2 * time.Second},
			want: []time.Duration{ms(250), ms(750), ms(1250), ms(1750)},
		},
		{
			// Count stops the client early.
			name: "count caps messages",
			s:    Schedule{Interval: 100 * time.Millisecond, Steady: 10 * time.Second, Count: 3},
			want: []time.Duration{0, ms(100), ms(200)},
		},
		{
			// Warmup at full rate (0, 0.5), then a 2 s ramp from 0 to the
			// target: N(t) = 2 + (t-1)²/2 in seconds, so k=2 at t=1 s (ramp
			// start), k=3 at 1+√2 s, k=4 at 3 s (ramp end), then steady
			// every 0.5 s.
			name: "warmup then linear ramp then steady",
			s:    Schedule{Interval: 500 * time.Millisecond, Warmup: time.Second, Ramp: 2 * time.Second, Steady: time.Second},
			want: []time.Duration{0, ms(500), ms(1000), ms(1000 + 1000*math.Sqrt2), ms(3000), ms(3500)},
		},
		{
			// A ramp alone starts slowly: N(t) = t²/(2·R·e) with R=1 s,
			// e=0.1 s, so message k is at sqrt(0.2·k) s: 0, 0.447, 0.632,
			// 0.775, 0.894, then 1.0 s is the ramp's end (k=5, steady).
			name: "ramp from zero",
			s:    Schedule{Interval: 100 * time.Millisecond, Ramp: time.Second, Steady: 150 * time.Millisecond},
			want: []time.Duration{
				0,
				time.Duration(math.Sqrt(0.2) * 1e9),
				time.Duration(math.Sqrt(0.4) * 1e9),
				time.Duration(math.Sqrt(0.6) * 1e9),
				time.Duration(math.Sqrt(0.8) * 1e9),
				ms(1000), ms(1100),
			},
		},
		{
			name: "no interval sends nothing",
			s:    Schedule{Steady: time.Second},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []time.Duration
			for k := 0; k < 1000; k++ {
				at, ok := tt.s.At(k)
				if !ok {
					break
				}
				got = append(got, at)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d messages %v, want %d %v", len(got), got, len(tt.want), tt.want)
			}
			for i := range got {
				if d := got[i] - tt.want[i]; d < -time.Microsecond || d > time.Microsecond {
					t.Errorf("message %d at %v, want %v", i, got[i], tt.want[i])
				}
			}
			if n := tt.s.Messages(0, tt.s.End()); n != len(tt.want) {
				t.Errorf("Messages(0, End) = %d, want %d", n, len(tt.want))
			}
		})
	}
}

// TestScheduleMessagesOracle checks the window counter against a plain
// walk over At for many windows.
func TestScheduleMessagesOracle(t *testing.T) {
	s := Schedule{Interval: 37 * time.Millisecond, Phase: 0.3, Warmup: 700 * time.Millisecond, Ramp: 1300 * time.Millisecond, Steady: 2 * time.Second}
	var all []time.Duration
	for k := 0; ; k++ {
		at, ok := s.At(k)
		if !ok {
			break
		}
		all = append(all, at)
	}
	for from := time.Duration(0); from < s.End(); from += 170 * time.Millisecond {
		for to := from; to <= s.End(); to += 230 * time.Millisecond {
			want := 0
			for _, at := range all {
				if at >= from && at < to {
					want++
				}
			}
			if got := s.Messages(from, to); got != want {
				t.Fatalf("Messages(%v, %v) = %d, want %d", from, to, got, want)
			}
		}
	}
	// Intended times never go backwards.
	for i := 1; i < len(all); i++ {
		if all[i] < all[i-1] {
			t.Fatalf("message %d at %v before message %d at %v", i, all[i], i-1, all[i-1])
		}
	}
}

// testPlan builds a plan in Go so that compile tests do not depend on the loader.
func testPlan(groups ...Group) *Plan {
	for i := range groups {
		if groups[i].Count == 0 {
			groups[i].Count = 1
		}
		if groups[i].Start == 0 {
			groups[i].Start = 1
		}
	}
	return &Plan{
		File:     "test.yaml",
		Name:     "test",
		Broker:   Broker{URLs: []string{Embedded}, Protocol: 5, ConnectTimeout: 10 * time.Second},
		Groups:   groups,
		Duration: 10 * time.Second,
		Drain:    time.Second,
	}
}

func sub(name string, count int, filters ...string) Group {
	g := Group{Name: name, Count: count, ConnectRate: 1000}
	for _, f := range filters {
		g.Subscribe = append(g.Subscribe, Subscription{Topic: MustTemplate(f), QoS: 1})
	}
	return g
}

func pub(name string, count int, topic string) Group {
	return Group{Name: name, Count: count, ConnectRate: 1000, Publish: &Publish{
		Topic: MustTemplate(topic), QoS: 1, Size: 100, Every: time.Second,
	}}
}

func TestCompileExpectations(t *testing.T) {
	tests := []struct {
		name   string
		groups []Group
		// want is Expected per publishing client, in client order.
		want []int
		// byGroup is ExpectedByGroup of the first publisher.
		byGroup []int
	}{
		{
			name:    "one to one",
			groups:  []Group{sub("sub", 3, "bench/%i"), pub("pub", 3, "bench/%i")},
			want:    []int{1, 1, 1},
			byGroup: []int{1, 0},
		},
		{
			name:    "fan-out: every subscriber hears the one topic",
			groups:  []Group{pub("pub", 2, "t"), sub("sub", 5, "t")},
			want:    []int{5, 5},
			byGroup: []int{0, 5},
		},
		{
			// One client with two matching filters gets one copy.
			name:    "fan-in with overlapping wildcards",
			groups:  []Group{sub("collector", 1, "sensors/+/temp", "sensors/#"), pub("sensors", 3, "sensors/%i/temp")},
			want:    []int{1, 1, 1},
			byGroup: []int{1, 0},
		},
		{
			name:    "wildcards that do not match",
			groups:  []Group{sub("s", 1, "sensors/+/hum", "other/#", "sensors/+"), pub("p", 1, "sensors/1/temp")},
			want:    []int{0},
			byGroup: []int{0, 0},
		},
		{
			name:    "hash matches the parent level",
			groups:  []Group{sub("s", 2, "a/#"), pub("p", 1, "a")},
			want:    []int{2},
			byGroup: []int{2, 0},
		},
		{
			name:    "shared subscription counts once per share group",
			groups:  []Group{sub("workers", 5, "$share/w/jobs/#"), pub("p", 2, "jobs/%i")},
			want:    []int{1, 1},
			byGroup: []int{1, 0},
		},
		{
			name: "two share groups and an ordinary subscriber",
			groups: []Group{
				sub("w1", 3, "$share/a/jobs/+"), sub("w2", 2, "$share/b/jobs/#"),
				sub("audit", 1, "jobs/#"), pub("p", 1, "jobs/1"),
			},
			want:    []int{3},
			byGroup: []int{1, 1, 1, 0},
		},
		{
			name:    "dollar topics are not matched by leading wildcards",
			groups:  []Group{sub("s", 1, "#", "+/x"), sub("sys", 1, "$SYS/#"), pub("p", 1, "$SYS/x")},
			want:    []int{1},
			byGroup: []int{0, 1, 0},
		},
		{
			name:    "a client hears itself",
			groups:  []Group{{Name: "echo", Count: 2, Subscribe: []Subscription{{Topic: MustTemplate("e")}}, Publish: &Publish{Topic: MustTemplate("e"), Size: 16, Every: time.Second}}},
			want:    []int{2, 2},
			byGroup: []int{2},
		},
		{
			name: "no_local: a client does not hear itself, others still do",
			groups: []Group{
				{Name: "chat", Count: 3, Subscribe: []Subscription{{Topic: MustTemplate("room/#"), NoLocal: true}},
					Publish: &Publish{Topic: MustTemplate("room/x"), Size: 16, Every: time.Second}},
				sub("audit", 1, "room/#"),
			},
			want:    []int{3, 3, 3},
			byGroup: []int{2, 1},
		},
		{
			// The cached topic expectation must not leak between a
			// no_local publisher and an ordinary one on the same topic.
			name: "no_local next to an ordinary publisher on the same topic",
			groups: []Group{
				{Name: "quiet", Count: 1, Subscribe: []Subscription{{Topic: MustTemplate("t"), NoLocal: true}},
					Publish: &Publish{Topic: MustTemplate("t"), Size: 16, Every: time.Second}},
				pub("loud", 2, "t"),
				{Name: "quiet2", Count: 1, Subscribe: []Subscription{{Topic: MustTemplate("t"), NoLocal: true}},
					Publish: &Publish{Topic: MustTemplate("t"), Size: 16, Every: time.Second}},
			},
			// Subscribing groups connect first: quiet, quiet2, then loud.
			want:    []int{1, 1, 2, 2},
			byGroup: []int{0, 0, 1},
		},
		{
			name: "no_local on one filter, another filter of the same client still matches",
			groups: []Group{
				{Name: "both", Count: 2, Subscribe: []Subscription{{Topic: MustTemplate("room/#"), NoLocal: true}, {Topic: MustTemplate("room/+")}},
					Publish: &Publish{Topic: MustTemplate("room/x"), Size: 16, Every: time.Second}},
			},
			want:    []int{2, 2},
			byGroup: []int{2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := Compile(testPlan(tt.groups...), CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			var first []int
			for _, c := range prog.Clients {
				if c.Publish != nil {
					got = append(got, c.Publish.Expected)
					if first == nil {
						first = c.Publish.ExpectedByGroup
					}
				}
			}
			if !equalInts(got, tt.want) {
				t.Errorf("expected deliveries %v, want %v", got, tt.want)
			}
			if !equalInts(first, tt.byGroup) {
				t.Errorf("by group %v, want %v", first, tt.byGroup)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCompileClients(t *testing.T) {
	p := testPlan(
		pub("pub", 2, "bench/%c/%i"),
		Group{Name: "sub", Count: 2, Start: 10, ClientID: MustTemplate("s-%u"), Username: MustTemplate("user-%i"),
			ConnectRate: 2, Subscribe: []Subscription{{Topic: MustTemplate("bench/+/%i"), QoS: 2}}},
	)
	p.Broker.URLs = []string{"mqtt://a:1883", "mqtt://b:1883"}
	p.Broker.SourceAddresses = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}
	prog, err := Compile(p, CompileOptions{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		id, user, url, src, topic, filter string
		at                                time.Duration
	}
	wants := []want{
		// Subscribers first, whatever the plan order.
		{id: "s-user-10", user: "user-10", url: "mqtt://a:1883", src: "127.0.0.2", filter: "bench/+/10", at: 0},
		{id: "s-user-11", user: "user-11", url: "mqtt://b:1883", src: "127.0.0.3", filter: "bench/+/11", at: 500 * time.Millisecond},
		{id: "mqplan-r1-pub-1", url: "mqtt://a:1883", src: "127.0.0.4", topic: "bench/mqplan-r1-pub-1/1", at: 0},
		{id: "mqplan-r1-pub-2", url: "mqtt://b:1883", src: "127.0.0.2", topic: "bench/mqplan-r1-pub-2/2", at: time.Millisecond},
	}
	if len(prog.Clients) != len(wants) {
		t.Fatalf("%d clients, want %d", len(prog.Clients), len(wants))
	}
	for i, w := range wants {
		c := prog.Clients[i]
		got := want{id: c.ID, user: c.Username, url: c.URL, src: c.SourceAddr, at: c.ConnectAt}
		if c.Publish != nil {
			got.topic = c.Publish.Topic
		}
		if len(c.Subscriptions) > 0 {
			got.filter = c.Subscriptions[0].Filter
		}
		if got != w {
			t.Errorf("client %d = %+v, want %+v", i, got, w)
		}
		if c.Index != i {
			t.Errorf("client %d has index %d", i, c.Index)
		}
	}
	if g := prog.Groups[1]; g.First != 0 || g.Count != 2 || g.Stage != 0 {
		t.Errorf("sub group = %+v", g)
	}
	if g := prog.Groups[0]; g.First != 2 || g.Stage != 1 {
		t.Errorf("pub group = %+v", g)
	}
}

func TestCompilePhases(t *testing.T) {
	p := testPlan(sub("sub", 10, "t/%i"), pub("pub", 10, "t/%i"))
	p.Groups[1].Publish.Every = 500 * time.Millisecond
	p.Warmup, p.Ramp, p.Duration = 2*time.Second, 2*time.Second, 10*time.Second
	prog, err := Compile(p, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]PhasePlan{}
	for _, ph := range prog.Phases {
		byName[ph.Name] = ph
	}
	// 10 clients at 2 msg/s: 40 in the 2 s warmup, half that (20) over
	// the 2 s linear ramp, 200 in the 10 s steady phase.
	for name, want := range map[string]int64{PhaseWarmup: 40, PhaseRamp: 20, PhaseSteady: 200} {
		if got := byName[name].Messages; got != want {
			t.Errorf("%s: %d messages, want %d", name, got, want)
		}
		if got := byName[name].Deliveries; got != want {
			t.Errorf("%s: %d deliveries, want %d", name, got, want)
		}
		if got := byName[name].Bytes; got != want*100 {
			t.Errorf("%s: %d bytes, want %d", name, got, want*100)
		}
	}
	if got := byName[PhaseConnect]; got.Connects != 20 || got.Length != 9*time.Millisecond+9*time.Millisecond {
		t.Errorf("connect phase = %+v", got)
	}
}

func TestCompileSteadyFromCounts(t *testing.T) {
	p := testPlan(sub("sub", 1, "t"), pub("pub", 4, "t"))
	p.Duration = 0
	p.Groups[1].Publish.Count = 5
	p.Groups[1].Publish.Every = 100 * time.Millisecond
	prog, err := Compile(p, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, c := range prog.Clients {
		if c.Publish == nil {
			continue
		}
		for k := 0; ; k++ {
			if _, ok := c.Publish.Schedule.At(k); !ok {
				break
			}
			total++
		}
	}
	if total != 20 {
		t.Errorf("%d messages scheduled, want 4 clients × 5", total)
	}
	// The slowest client (phase 3/4) sends its last message at
	// 0.4 s + 0.075 s; the steady phase ends just after.
	if prog.Steady < 475*time.Millisecond || prog.Steady > 480*time.Millisecond {
		t.Errorf("steady = %v", prog.Steady)
	}
}
