package plans

import (
	"fmt"
	"github.com/mqplan/mqplan/phase"
	"math"
	"math/rand/v2"
	"strings"
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
			// With a ramp the rate rises from 0 over warmup and ramp
			// together (3 s), never falling: N(t) = t²/(2·3·0.5) = t²/3
			// in seconds, so k=1 at √3 s, k=2 at √6 s, k=3 at 3 s (the
			// ramp's end), then steady every 0.5 s.
			name: "warmup and ramp rise together then steady",
			s:    Schedule{Interval: 500 * time.Millisecond, Warmup: time.Second, Ramp: 2 * time.Second, Steady: time.Second},
			want: []time.Duration{0, ms(1000 * math.Sqrt(3)), ms(1000 * math.Sqrt(6)), ms(3000), ms(3500)},
		},
		{
			// Without a ramp, warmup publishes at the target.
			name: "warmup at the target then steady",
			s:    Schedule{Interval: 500 * time.Millisecond, Warmup: time.Second, Steady: time.Second},
			want: []time.Duration{0, ms(500), ms(1000), ms(1500)},
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

// walkMessages is the slow, obviously-correct count that Messages
// replaces: it walks every message of the schedule.
func walkMessages(s Schedule, from, to time.Duration) int {
	n := 0
	for k := 0; ; k++ {
		at, ok := s.At(k)
		if !ok || at >= to {
			return n
		}
		if at >= from {
			n++
		}
	}
}

// scheduleWindows are the windows checked against the oracle for s: the
// phase boundaries, each message's own intended time and the nanosecond
// on either side of it (where rounding would show), and a grid.
func scheduleWindows(s Schedule, rng *rand.Rand) []time.Duration {
	end := s.End()
	cuts := []time.Duration{0, 1, s.Warmup, s.Warmup + s.Ramp, end - 1, end, end + 1, end + s.Interval}
	n := walkMessages(s, 0, math.MaxInt64)
	for i := 0; i < min(n, 12); i++ {
		k := i // the first messages, then random ones
		if i >= 4 {
			k = rng.IntN(n)
		}
		at, _ := s.At(k)
		cuts = append(cuts, at-1, at, at+1)
	}
	if n > 0 {
		last, _ := s.At(n - 1)
		cuts = append(cuts, last-1, last, last+1)
	}
	for i := 0; i < 12; i++ {
		cuts = append(cuts, time.Duration(rng.Int64N(int64(end)+2)))
	}
	return cuts
}

// TestScheduleMessagesOracle checks the closed-form window count against
// a walk over At, for named schedules (every combination of the phases,
// a count, a phase shift) and for random ones.
func TestScheduleMessagesOracle(t *testing.T) {
	named := []struct {
		name string
		s    Schedule
	}{
		{"steady only", Schedule{Interval: 500 * time.Millisecond, Steady: 2 * time.Second}},
		{"steady, staggered", Schedule{Interval: 500 * time.Millisecond, Phase: 0.5, Steady: 2 * time.Second}},
		{"warmup only", Schedule{Interval: 7 * time.Millisecond, Warmup: time.Second}},
		{"ramp only", Schedule{Interval: 100 * time.Millisecond, Ramp: time.Second}},
		{"ramp then steady", Schedule{Interval: 100 * time.Millisecond, Ramp: time.Second, Steady: 150 * time.Millisecond}},
		{"warmup, ramp, steady, staggered", Schedule{Interval: 37 * time.Millisecond, Phase: 0.3, Warmup: 700 * time.Millisecond, Ramp: 1300 * time.Millisecond, Steady: 2 * time.Second}},
		{"count ends inside warmup", Schedule{Interval: time.Millisecond, Warmup: time.Second, Ramp: time.Second, Steady: time.Second, Count: 10}},
		{"count ends inside ramp", Schedule{Interval: time.Millisecond, Warmup: 10 * time.Millisecond, Ramp: time.Second, Steady: time.Second, Count: 200}},
		{"count beyond the end", Schedule{Interval: 10 * time.Millisecond, Steady: time.Second, Count: 1000}},
		{"interval longer than the timeline", Schedule{Interval: time.Hour, Phase: 0.9, Warmup: time.Second, Steady: time.Second}},
		{"message exactly at the end is out", Schedule{Interval: 250 * time.Millisecond, Steady: time.Second}},
		{"one-nanosecond interval", Schedule{Interval: 1, Phase: 0.5, Warmup: 300, Ramp: 1000, Steady: 500}},
		{"phase near 1", Schedule{Interval: 3 * time.Millisecond, Phase: 0.9999999, Ramp: 100 * time.Millisecond, Steady: 100 * time.Millisecond}},
		{"no interval", Schedule{Steady: time.Second}},
	}
	check := func(t *testing.T, s Schedule, rng *rand.Rand) {
		t.Helper()
		// The oracle's answer for [from, to) is a difference of two walks
		// from 0 (below(to) - below(from)), so each cut is walked once.
		cuts := scheduleWindows(s, rng)
		below := make(map[time.Duration]int, len(cuts))
		for _, c := range cuts {
			below[c] = walkMessages(s, 0, c)
		}
		for _, from := range cuts {
			for _, to := range cuts {
				want := max(0, below[to]-below[from])
				if got := s.Messages(from, to); got != want {
					t.Fatalf("%+v: Messages(%d, %d) = %d, want %d", s, from, to, got, want)
				}
			}
		}
		// Intended times never go backwards: Messages relies on it.
		prev := time.Duration(-1)
		for k := 0; ; k++ {
			at, ok := s.At(k)
			if !ok {
				break
			}
			if at < prev {
				t.Fatalf("%+v: message %d at %v before message %d at %v", s, k, at, k-1, prev)
			}
			prev = at
		}
	}
	for _, tt := range named {
		t.Run(tt.name, func(t *testing.T) {
			check(t, tt.s, rand.New(rand.NewPCG(1, 2)))
		})
	}
	t.Run("random", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		phaseLen := func() time.Duration {
			switch rng.IntN(3) {
			case 0:
				return 0
			case 1:
				return time.Duration(rng.Int64N(1000)) // a few nanoseconds: rounding at its worst
			}
			return time.Duration(rng.Int64N(int64(2 * time.Second)))
		}
		for i := 0; i < 300; i++ {
			s := Schedule{
				Interval: time.Duration(1 + rng.Int64N(int64(50*time.Millisecond))),
				Phase:    rng.Float64(),
				Warmup:   phaseLen(),
				Ramp:     phaseLen(),
				Steady:   phaseLen(),
			}
			if rng.IntN(3) == 0 {
				s.Count = 1 + rng.IntN(300)
			}
			if s.End() == 0 || int64(s.End())/int64(s.Interval) > 20000 {
				s.Interval = max(s.End()/2000, 1) + time.Duration(rng.Int64N(1000))
			}
			check(t, s, rng)
		}
	})
}

// TestScheduleMessagesLong checks that counting a long schedule costs no
// walk: a year at 1 µs a message is 3·10¹³ messages, which a walk could
// not count in a test's lifetime, and the count agrees with the rate.
func TestScheduleMessagesLong(t *testing.T) {
	year := 365 * 24 * time.Hour
	s := Schedule{Interval: time.Microsecond, Warmup: year, Ramp: year, Steady: year}
	// The rise spans warmup and ramp (two years): a quarter of a year's
	// messages at the target in the first, three quarters in the second.
	if got, want := s.Messages(0, s.Warmup), int(year/time.Microsecond/4); got != want {
		t.Errorf("warmup: %d messages, want %d (the first half of the rise)", got, want)
	}
	if got, want := s.Messages(s.Warmup, s.Warmup+s.Ramp), int(year/time.Microsecond)*3/4; got != want {
		t.Errorf("ramp: %d messages, want %d (the second half of the rise)", got, want)
	}
	if got, want := s.Messages(0, s.End()), int(year/time.Microsecond)*2; got != want {
		t.Errorf("all: %d messages, want %d", got, want)
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
	if g := prog.Groups[1]; g.First != 0 || g.Count != 2 || g.Stage != ConnectSubscribers {
		t.Errorf("sub group = %+v", g)
	}
	if g := prog.Groups[0]; g.First != 2 || g.Stage != ConnectOthers {
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
	for i, ph := range prog.Phases {
		if ph.Phase != phase.Phase(i) {
			t.Errorf("Phases[%d] is %v: the slice must be indexed by phase", i, ph.Phase)
		}
	}
	// 10 clients at 2 msg/s, the rate rising from 0 over warmup and ramp
	// (4 s, 40 messages in all): a quarter of them (10) in the 2 s warmup,
	// the rest (30) in the 2 s ramp, 200 in the 10 s steady phase.
	for ph, want := range map[phase.Phase]int64{phase.Warmup: 10, phase.Ramp: 30, phase.Steady: 200} {
		if got := prog.Phases[ph].Messages; got != want {
			t.Errorf("%s: %d messages, want %d", ph, got, want)
		}
		if got := prog.Phases[ph].Deliveries; got != want {
			t.Errorf("%s: %d deliveries, want %d", ph, got, want)
		}
		if got := prog.Phases[ph].Bytes; got != want*100 {
			t.Errorf("%s: %d bytes, want %d", ph, got, want*100)
		}
	}
	if got := prog.Phases[phase.Connect]; got.Connects != 20 || got.Length != 9*time.Millisecond+9*time.Millisecond {
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

// bruteExpected is the expectation oracle: every publisher against every
// subscription with MatchFilter, no trie, no counting shortcuts.
func bruteExpected(prog *Program, pub *Client) []int {
	by := make([]int, len(prog.Groups))
	shareSeen := map[int]bool{}
	for _, c := range prog.Clients {
		got := false
		for _, s := range c.Subscriptions {
			_, filter, _ := SplitShare(s.Filter)
			if !MatchFilter(filter, pub.Publish.Topic) {
				continue
			}
			if s.Share != "" {
				if !shareSeen[s.ShareKey] {
					shareSeen[s.ShareKey] = true
					by[c.Group]++ // the first member's group, in client order
				}
				continue
			}
			if s.NoLocal && c.Index == pub.Index {
				continue
			}
			got = true
		}
		if got {
			by[c.Group]++
		}
	}
	return by
}

// TestCompileExpectationsOracle compares the trie's expectations with the
// brute-force oracle on random plans: wildcards, $share groups, clients
// with one filter and with several, no_local, fixed and %i topics.
func TestCompileExpectationsOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	filters := []string{"#", "+", "a", "a/#", "a/+", "a/b", "a/%i", "+/b", "+/+", "a/+/c", "$share/s1/a/#", "$share/s2/+/b", "$share/s1/a/b", "$SYS/#", "b/%i/#"}
	topics := []string{"a", "a/b", "a/1", "a/2", "b/1/x", "a/b/c", "c", "$SYS/x", "a/%i", "b/%i/c"}
	for i := 0; i < 300; i++ {
		var groups []Group
		for g := 0; g < 1+rng.IntN(4); g++ {
			gr := Group{Name: fmt.Sprintf("g%d", g), Count: 1 + rng.IntN(4), ConnectRate: 1000}
			for f := 0; f < rng.IntN(4); f++ {
				s := Subscription{Topic: MustTemplate(filters[rng.IntN(len(filters))])}
				s.NoLocal = rng.IntN(4) == 0 && !strings.HasPrefix(s.Topic.String(), "$share/")
				gr.Subscribe = append(gr.Subscribe, s)
			}
			if rng.IntN(2) == 0 || len(gr.Subscribe) == 0 {
				gr.Publish = &Publish{Topic: MustTemplate(topics[rng.IntN(len(topics))]), Size: 16, Every: time.Second}
			}
			groups = append(groups, gr)
		}
		prog, err := Compile(testPlan(groups...), CompileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for j := range prog.Clients {
			c := &prog.Clients[j]
			if c.Publish == nil {
				continue
			}
			want := bruteExpected(prog, c)
			sum := 0
			for _, n := range want {
				sum += n
			}
			if !equalInts(c.Publish.ExpectedByGroup, want) || c.Publish.Expected != sum {
				t.Fatalf("plan %d, %s on %q: expected %d %v, want %d %v (groups %+v)", i, c, c.Publish.Topic,
					c.Publish.Expected, c.Publish.ExpectedByGroup, sum, want, groups)
			}
		}
	}
}
