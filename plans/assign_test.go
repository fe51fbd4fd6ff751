package plans

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// shippedProgram loads and compiles a shipped plan with sets applied.
func shippedProgram(t testing.TB, name string, sets ...string) *Program {
	t.Helper()
	data, err := fs.ReadFile(Shipped, name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := LoadBytes(name, data, LoadOptions{Sets: sets})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// assignCases are the shipped plans, the XMeter seed scaled down so that
// the brute-force oracles below stay quick.
func assignCases(t *testing.T) map[string]*Program {
	t.Helper()
	files, err := fs.Glob(Shipped, "*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("shipped plans: %v %v", files, err)
	}
	progs := map[string]*Program{}
	for _, f := range files {
		var sets []string
		if f == "xmeter-100k.yaml" {
			sets = []string{"groups.sub.count=300", "groups.pub.count=300"}
		}
		progs[strings.TrimSuffix(f, ".yaml")] = shippedProgram(t, f, sets...)
	}
	return progs
}

// receivers is the brute-force oracle of who receives publisher p's
// messages: each client with a matching ordinary subscription (its own
// through no_local excepted), and each matching share group once, as its
// first member.
func receivers(prog *Program, p int) []int {
	topic := prog.Clients[p].Publish.Topic
	var out []int
	shareSeen := map[int]bool{}
	for c := range prog.Clients {
		got := false
		for _, s := range prog.Clients[c].Subscriptions {
			_, filter, _ := SplitShare(s.Filter)
			if !MatchFilter(filter, topic) {
				continue
			}
			switch {
			case s.ShareKey >= 0:
				if !shareSeen[s.ShareKey] {
					shareSeen[s.ShareKey] = true
					out = append(out, c)
				}
			case !(s.NoLocal && c == p):
				got = true
			}
		}
		if got {
			out = append(out, c)
		}
	}
	return out
}

// TestAssignProperties holds every shipped plan's assignment, at 1, 2, 3
// and 8 shards, to what a sharded run relies on: every client owned by
// exactly one shard; each share group on one; each 1-to-1 pair on one;
// the deliveries by shard equal to a brute-force count and adding up to
// Expected; the per-shard totals adding up to the phase plan; the same
// result on every call.
func TestAssignProperties(t *testing.T) {
	for name, prog := range assignCases(t) {
		for _, n := range []int{1, 2, 3, 8} {
			t.Run(name+"/"+string(rune('0'+n)), func(t *testing.T) {
				a, err := Assign(prog, n)
				if err != nil {
					t.Fatal(err)
				}
				if len(a.Shard) != len(prog.Clients) || a.Shards != n {
					t.Fatalf("%d shards for %d clients, want %d for %d", a.Shards, len(a.Shard), n, len(prog.Clients))
				}
				owners := make([]int, len(prog.Clients))
				for s := 0; s < n; s++ {
					for c, own := range a.Mask(s) {
						if own {
							owners[c]++
						}
					}
				}
				for c, k := range owners {
					if k != 1 {
						t.Fatalf("client %d owned by %d shards", c, k)
					}
				}
				// Share groups whole.
				shareShard := map[int]int32{}
				for c := range prog.Clients {
					for _, s := range prog.Clients[c].Subscriptions {
						if s.ShareKey < 0 {
							continue
						}
						if sh, ok := shareShard[s.ShareKey]; ok && sh != a.Shard[c] {
							t.Errorf("share group %d split over shards %d and %d", s.ShareKey, sh, a.Shard[c])
						}
						shareShard[s.ShareKey] = a.Shard[c]
					}
				}
				// Deliveries by shard, against the oracle; pairs together.
				senders := make([]int, len(prog.Clients))
				recv := make([][]int, len(prog.Clients))
				for p := range prog.Clients {
					if prog.Clients[p].Publish == nil {
						continue
					}
					recv[p] = receivers(prog, p)
					want := make([]int, n)
					for _, c := range recv[p] {
						want[a.Shard[c]]++
						senders[c]++
					}
					if got := a.ExpectedByShard[p]; !slices.Equal(got, want) {
						t.Fatalf("client %d: ExpectedByShard %v, brute force %v", p, got, want)
					}
				}
				pairs := 0
				for p, rs := range recv {
					if len(rs) == 1 && senders[rs[0]] == 1 && rs[0] != p {
						pairs++
						if a.Shard[p] != a.Shard[rs[0]] {
							t.Errorf("1-to-1 pair %d → %d on shards %d and %d", p, rs[0], a.Shard[p], a.Shard[rs[0]])
						}
					}
				}
				if (name == "1to1-qos1" || name == "xmeter-100k") && pairs == 0 {
					t.Error("no 1-to-1 pairs found: the oracle is broken")
				}
				// Totals: the phase plan's, split.
				var msgs, dels int64
				for _, ph := range prog.Phases {
					msgs += ph.Messages
					dels += ph.Deliveries
				}
				var sends, got int64
				for s := 0; s < n; s++ {
					sends += a.Sends[s]
					got += a.Deliveries[s]
				}
				if sends != msgs || got != dels {
					t.Errorf("shards send %d and receive %d, the plan %d and %d", sends, got, msgs, dels)
				}
				if n == 1 && a.CrossDeliveries != 0 {
					t.Errorf("one shard, %d cross-shard deliveries", a.CrossDeliveries)
				}
				// Deterministic: again, and from a fresh compile.
				again, err := Assign(shippedProgramLike(t, prog), n)
				if err != nil {
					t.Fatal(err)
				}
				if again.Hash != a.Hash || !slices.Equal(again.Shard, a.Shard) {
					t.Errorf("a second assignment differs: %s vs %s", again.Hash, a.Hash)
				}
				if a.Hash != assignmentHash(a.Version, n, a.Shard) || len(a.Hash) != 64 {
					t.Errorf("hash %q is not the hash of the assignment", a.Hash)
				}
			})
		}
	}
}

// shippedProgramLike compiles prog's plan again, from scratch.
func shippedProgramLike(t *testing.T, prog *Program) *Program {
	t.Helper()
	again, err := Compile(prog.Plan, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return again
}

// TestAssignStripesConnectRamps checks that the groups the auto strategy
// stripes (1-to-1 pairs, idle clients, the clients of a unit too big for
// one shard) spread within one client of even over the shards, so that
// each shard connects at its share of the group's rate.
func TestAssignStripesConnectRamps(t *testing.T) {
	progs := assignCases(t)
	tests := []struct {
		plan   string
		groups []string
	}{
		{"1to1-qos1", []string{"sub", "pub"}},
		{"xmeter-100k", []string{"sub", "pub"}},
		{"conn-storm", []string{"idle"}},
		{"fanout-qos0", []string{"sub", "pub"}},
		{"fanin-qos1", []string{"sensors"}},
		{"shared-sub", []string{"producers"}},
		{"command-response", []string{"devices", "backend"}},
		{"stages", []string{"sensors"}},
	}
	for _, tt := range tests {
		prog := progs[tt.plan]
		if prog == nil {
			t.Fatalf("no shipped plan %s", tt.plan)
		}
		for _, n := range []int{2, 3, 8} {
			a, err := Assign(prog, n)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range tt.groups {
				gp := groupNamed(t, prog, name)
				count := make([]int, n)
				for c := gp.First; c < gp.First+gp.Count; c++ {
					count[a.Shard[c]]++
				}
				lo, hi := gp.Count/n, (gp.Count+n-1)/n
				for s, k := range count {
					if k < lo || k > hi {
						t.Errorf("%s at %d shards: group %s has %d clients on shard %d, want %d to %d (%v)", tt.plan, n, name, k, s, lo, hi, count)
					}
				}
			}
		}
	}
}

func groupNamed(t *testing.T, prog *Program, name string) *GroupProgram {
	t.Helper()
	for i := range prog.Groups {
		if prog.Groups[i].Name == name {
			return &prog.Groups[i]
		}
	}
	t.Fatalf("no group %s", name)
	return nil
}

// TestAssignCases pins the assignments whose shape is the point: what
// stays together, what is split, and the cross-shard share it costs.
func TestAssignCases(t *testing.T) {
	tests := []struct {
		name   string
		plan   string
		sets   []string
		n      int
		counts []int
		split  int
		// cross is the share of planned deliveries across shards, in %.
		cross int64
	}{
		{name: "pairs round-robin, no delivery across shards", plan: "1to1-qos1.yaml", n: 8, counts: []int{26, 26, 26, 26, 24, 24, 24, 24}},
		{name: "more shards than pairs: pairs kept, shards idle", plan: "1to1-qos1.yaml", sets: []string{"groups.sub.count=3", "groups.pub.count=3"}, n: 8, counts: []int{2, 2, 2, 0, 0, 0, 0, 0}},
		{name: "one shard holds everything", plan: "fanout-qos0.yaml", n: 1, counts: []int{70}},
		{name: "fan-out split: each message reaches every shard", plan: "fanout-qos0.yaml", n: 2, counts: []int{35, 35}, split: 1, cross: 50},
		{name: "fan-in split: sensors striped, the collector in one place", plan: "fanin-qos1.yaml", n: 2, counts: []int{101, 100}, split: 1, cross: 50},
		{name: "share group whole, producers striped", plan: "shared-sub.yaml", n: 8, counts: []int{6, 2, 2, 1, 1, 1, 1, 1}, split: 1, cross: 90},
		{name: "idle clients round-robin", plan: "conn-storm.yaml", n: 3, counts: []int{667, 667, 666}},
		{name: "stripe: client i on shard i mod n, pairs cut", plan: "1to1-qos1.yaml", sets: []string{"sharding.strategy=stripe"}, n: 8, counts: []int{25, 25, 25, 25, 25, 25, 25, 25}, cross: 100},
		{name: "stripe keeps a share group whole", plan: "shared-sub.yaml", sets: []string{"sharding.strategy=stripe"}, n: 3, counts: []int{8, 3, 4}, cross: 70},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog := shippedProgram(t, tt.plan, tt.sets...)
			a, err := Assign(prog, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Counts(); !slices.Equal(got, tt.counts) || a.Split != tt.split {
				t.Errorf("counts %v split %d, want %v split %d", got, a.Split, tt.counts, tt.split)
			}
			var total int64
			for _, d := range a.Deliveries {
				total += d
			}
			if total == 0 {
				total = 1 // no messages, none across
			}
			if cross := a.CrossDeliveries * 100 / total; cross != tt.cross {
				t.Errorf("%d%% of deliveries across shards (%d of %d), want %d%%", cross, a.CrossDeliveries, total, tt.cross)
			}
		})
	}
}

// TestAssignHash checks that the hash names the assignment: another
// shard for one client, another n or another strategy changes it.
func TestAssignHash(t *testing.T) {
	prog := shippedProgram(t, "1to1-qos1.yaml")
	a, err := Assign(prog, 4)
	if err != nil {
		t.Fatal(err)
	}
	moved := slices.Clone(a.Shard)
	moved[17] = (moved[17] + 1) % 4
	b, err := Assign(prog, 5)
	if err != nil {
		t.Fatal(err)
	}
	stripe := shippedProgram(t, "1to1-qos1.yaml", "sharding.strategy=stripe")
	c, err := Assign(stripe, 4)
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]string{
		"one client moved":   assignmentHash(a.Version, 4, moved),
		"five shards":        b.Hash,
		"stripe":             c.Hash,
		"same array, v2":     assignmentHash("auto-v2", 4, a.Shard),
		"same array, n = 5":  assignmentHash(a.Version, 5, a.Shard),
		"one client dropped": assignmentHash(a.Version, 4, a.Shard[1:]),
	} {
		if h == a.Hash {
			t.Errorf("%s: the hash did not change", name)
		}
	}
	if a.Version != "auto-v1" || c.Version != "stripe-v1" {
		t.Errorf("versions %q and %q", a.Version, c.Version)
	}
}

// TestAssignShardCount checks the bounds of n.
func TestAssignShardCount(t *testing.T) {
	prog := shippedProgram(t, "fanin-qos1.yaml")
	for _, tt := range []struct {
		name string
		n    int
		ok   bool
	}{
		{"zero", 0, false},
		{"negative", -3, false},
		{"one", 1, true},
		{"the limit", MaxShards, true},
		{"past the limit", MaxShards + 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Assign(prog, tt.n)
			if (err == nil) != tt.ok {
				t.Fatalf("Assign(%d): %v", tt.n, err)
			}
			if err != nil && !strings.Contains(err.Error(), "give 1 to 1024") {
				t.Errorf("error %q does not say the range", err)
			}
			if tt.ok && len(a.Counts()) != tt.n {
				t.Errorf("%d shards", len(a.Counts()))
			}
		})
	}
}

// BenchmarkAssignXMeter100k measures the assignment of the XMeter seed
// (100,000 clients, 50,000 pairs) over 10 shards: about 90 ms here.
func BenchmarkAssignXMeter100k(b *testing.B) {
	prog := shippedProgram(b, "xmeter-100k.yaml")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Assign(prog, 10); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAssignUnits checks which clients the auto strategy keeps together.
func TestAssignUnits(t *testing.T) {
	const pairs = "duration: 2s\ngroups:\n  - {name: sub, count: 6, subscribe: \"t/%i\"}\n  - {name: pub, count: 6, publish: {topic: \"t/%i\", every: 1s}}\n"
	tests := []struct {
		name  string
		plan  string
		units int
	}{
		{"1-to-1 pairs", pairs, 6},
		{"a topic no one hears keeps its publishers apart", "groups:\n  - {name: pub, count: 8, publish: {topic: t, every: 1s}}\nduration: 2s\n", 8},
		{"publishers on one heard topic together", "groups:\n  - {name: s, subscribe: t}\n  - {name: pub, count: 8, publish: {topic: t, every: 1s}}\nduration: 2s\n", 1},
		{"a monitor on # joins every pair", pairs + "  - {name: monitor, subscribe: \"#\"}\n", 1},
		{"a share group is one unit without publishers", "groups:\n  - {name: w, count: 5, subscribe: \"$share/g/t\"}\n  - {name: idle, count: 3}\nduration: 2s\n", 4},
		{"requests join requester and responder", "broker: {protocol: 5}\ngroups:\n  - {name: dev, count: 4, respond: {topic: \"cmd/%i\"}}\n  - {name: app, count: 4, publish: {topic: \"cmd/%i\", response_topic: \"r/%c\", every: 1s}}\nduration: 2s\n", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := LoadBytes("units.yaml", []byte(tt.plan), LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			prog, err := Compile(p, CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := Assign(prog, 2)
			if err != nil {
				t.Fatal(err)
			}
			if a.Units != tt.units {
				t.Errorf("%d units, want %d", a.Units, tt.units)
			}
		})
	}
}

// FuzzAssign assigns every plan the loader accepts (the valid fixtures and
// what the fuzzer makes of them) over 1 to 64 shards: Assign must not
// panic, and its result must own every client once, keep share groups
// whole, split each publisher's Expected exactly, and repeat itself.
func FuzzAssign(f *testing.F) {
	for _, data := range fixturePlans(f, validDir) {
		for _, n := range []uint8{0, 2, 7} {
			f.Add(data, n)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, nb uint8) {
		p, err := LoadBytes("fuzz.yaml", data, LoadOptions{LookupEnv: fuzzEnv})
		if err != nil {
			return
		}
		prog, err := Compile(p, CompileOptions{})
		if err != nil || len(prog.Clients) > 20_000 {
			return
		}
		n := int(nb)%64 + 1
		a, err := Assign(prog, n)
		if err != nil {
			t.Fatalf("Assign(%d): %v", n, err)
		}
		shareShard := map[int]int32{}
		for c := range prog.Clients {
			if s := a.Shard[c]; s < 0 || int(s) >= n {
				t.Fatalf("client %d on shard %d of %d", c, s, n)
			}
			for _, s := range prog.Clients[c].Subscriptions {
				if sh, ok := shareShard[s.ShareKey]; s.ShareKey >= 0 && ok && sh != a.Shard[c] {
					t.Fatalf("share group %d split", s.ShareKey)
				}
				shareShard[s.ShareKey] = a.Shard[c]
			}
			if pub := prog.Clients[c].Publish; pub != nil {
				sum := 0
				for _, k := range a.ExpectedByShard[c] {
					sum += k
				}
				if sum != pub.Expected {
					t.Fatalf("client %d: %d by shard, %d expected", c, sum, pub.Expected)
				}
			}
		}
		again, err := Assign(prog, n)
		if err != nil || again.Hash != a.Hash {
			t.Fatalf("a second assignment differs: %v", err)
		}
	})
}
