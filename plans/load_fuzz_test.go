package plans

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzEnv gives the fuzzer a few variables to find, and leaves the rest
// unset so that the unset-variable path is exercised too.
func fuzzEnv(name string) (string, bool) {
	switch name {
	case "A":
		return "a", true
	case "N":
		return "5", true
	case "EMPTY":
		return "", true
	case "MQTT_PASSWORD":
		return "s3cret", true
	}
	return "", false
}

// FuzzLoad feeds arbitrary plans and --set lists (one a line) to
// LoadBytes. Whatever the input, it must not panic, and it must return
// either a plan or positioned Errors, never both.
func FuzzLoad(f *testing.F) {
	for _, data := range fixturePlans(f, validDir, invalidDir) {
		f.Add(data, "")
	}
	minimal, err := os.ReadFile(filepath.Join(validDir, "minimal.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, sets := range []string{
		"duration=1s\ngroups.pub.count=3",
		"groups[0].publish={topic: x, rate: 5/s}",
		"groups[0].publish={topic: x, qos: 1, rate: max, inflight: 3}",
		"groups.pub.subscribe[0]=a/#\ngroups.pub.subscribe[1]={topic: b}",
		"broker.urls=[mqtt://a, ws://b]\nthresholds[0]=p99 < 1s",
		"groups.nope.x=1\n=\ngroups[9].count=1\nx[1][2]=[",
		"groups[0].respond={topic: cmd/%i, qos: 1}\ngroups[1].publish.response_topic=resp/%c\ngroups[1].publish.response_timeout=1s",
		"stages=[{duration: 1s, rate: 5/s}, {duration: 0s, every: 1s}]\ngroups.pub.publish.every=",
		"groups[0].publish={topic: x, every: 1s, start_delay: {min: 1s, max: 2s}, arrival: poisson}",
		"groups[0].publish={topic: x, burst: {every: 1s, messages: 2}, start_delay: {max: 0s}}\ngroups[0].publish.start_delay.min=-1s",
		"groups[0].publish={topic: x, stages: [{name: a, duration: 1s, rate: 5/s}, {duration: 0s, every: 1s}]}\nduration=",
		"stages=[{name: a, duration: 1s, rate: 5/s}]\ngroups[0].publish={topic: x, stages: [{name: a, duration: 2s, rate: 1/s}]}",
		"groups.pub.lifetime={min: 10ms, max: 2s}\ngroups.pub.away=100ms\nseed=3",
		"stages=[{duration: 0s, every: 1s, clients: {pub: 0}}, {duration: 1s, every: 1s, clients: {pub: 1, nope: 2}}]\ngroups.pub.publish.every=",
		"sharding={strategy: stripe}",
		"sharding.strategy=auto\nsharding.shards=2",
		"sharding=[auto]\nsharding.strategy=",
		"drain={max: 30s, quiet: 1s}",
		"drain.max=10s\ndrain.quiet=20s",
		"drain={max: 1s, quiet: -1s, nope: 2}\ndrain=3s",
	} {
		f.Add(minimal, sets)
	}

	f.Fuzz(func(t *testing.T, data []byte, sets string) {
		var opts LoadOptions
		opts.LookupEnv = fuzzEnv
		if sets != "" {
			opts.Sets = strings.Split(sets, "\n")
		}
		p, err := LoadBytes("fuzz.yaml", data, opts)
		if err == nil {
			if p == nil {
				t.Fatal("no plan and no error")
			}
			checkPlanInvariants(t, p)
			return
		}
		if p != nil {
			t.Fatal("a plan along with an error")
		}
		var es Errors
		if !errors.As(err, &es) {
			t.Fatalf("LoadBytes returned %T, want Errors: %v", err, err)
		}
		if len(es) == 0 {
			t.Fatal("empty Errors")
		}
		for _, e := range es {
			if e.Pos.Line < 1 && e.Pos.File != setPosFile {
				t.Fatalf("error without a line: %q", e)
			}
			if e.Pos.Line >= 1 && e.Pos.Col < 1 {
				t.Fatalf("error without a column: %q", e)
			}
		}
	})
}

// fixturePlans reads the plan fixtures (*.yaml) of dirs, the fuzzers' seeds.
func fixturePlans(f *testing.F, dirs ...string) [][]byte {
	f.Helper()
	var out [][]byte
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			out = append(out, data)
		}
	}
	return out
}

// checkPlanInvariants checks what every loaded plan promises, so that the
// compiler can rely on it without checking again.
func checkPlanInvariants(t *testing.T, p *Plan) {
	t.Helper()
	if p.Name == "" {
		t.Error("empty plan name")
	}
	if len(p.Broker.URLs) == 0 {
		t.Error("no broker URL")
	}
	if p.Broker.Protocol < 3 || p.Broker.Protocol > 5 || p.Broker.ConnectTimeout <= 0 {
		t.Errorf("bad broker: %+v", p.Broker)
	}
	if len(p.Groups) == 0 {
		t.Error("no groups")
	}
	if p.Warmup < 0 || p.Ramp < 0 || p.Duration < 0 || p.Drain < 0 {
		t.Errorf("negative phase: %+v", p)
	}
	counted := true
	for _, g := range p.Groups {
		if g.Name == "" || g.Count < 1 || g.Start < 0 || g.Protocol < 3 || g.Protocol > 5 || g.ConnectRate < 0 {
			t.Errorf("bad group: %+v", g)
		}
		for _, s := range g.Subscribe {
			if s.QoS > 2 || s.Topic.IsZero() {
				t.Errorf("bad subscription in %s: %+v", g.Name, s)
			}
		}
		if pub := g.Publish; pub != nil {
			// Exactly one of every, rate, burst and max, or neither when stages give the rate.
			n := 0
			for _, set := range []bool{pub.Every > 0, pub.Rate > 0, pub.Burst != nil, pub.Max} {
				if set {
					n++
				}
			}
			rated := n == 1
			if len(p.Stages) > 0 {
				rated = n == 0
			}
			if d := pub.StartDelay; d != nil && (d.Min < 0 || d.Max < d.Min || d.Max > maxTimeline || pub.Burst != nil || pub.Max) {
				t.Errorf("bad start_delay in %s: %+v", g.Name, d)
			}
			// A group's own stages follow the plan's timeline exactly.
			if len(pub.Stages) > 0 {
				positive := false
				for i, st := range pub.Stages {
					if i >= len(p.Stages) || st.Name != p.Stages[i].Name || st.Duration != p.Stages[i].Duration {
						t.Errorf("%s's stages are not the plan's timeline: %+v, %+v", g.Name, pub.Stages, p.Stages)
						break
					}
					positive = positive || st.Rate > 0 || st.Every > 0
				}
				if len(pub.Stages) != len(p.Stages) || !positive {
					t.Errorf("bad stages in %s: %+v", g.Name, pub.Stages)
				}
			}
			if b := pub.Burst; b != nil && (b.Every <= 0 || b.Messages < 1 || b.Messages > maxBurstMessages) {
				t.Errorf("bad burst in %s: %+v", g.Name, b)
			}
			if pub.QoS > 2 || (pub.Size < HeaderSize) != (pub.Payload != nil) || !rated || pub.Count < 0 {
				t.Errorf("bad publish in %s: %+v", g.Name, pub)
			}
			if d := pub.Sizes; d != nil && (pub.Payload != nil || len(d.Choices) == 0 && (d.Min < HeaderSize || d.Min > d.Max)) {
				t.Errorf("bad size distribution in %s: %+v", g.Name, d)
			}
			if pub.Payload != nil && pub.Header != HeaderPrefix && pub.Header != HeaderProperty && pub.Header != HeaderField {
				t.Errorf("a template without its header's place in %s: %q", g.Name, pub.Header)
			}
			// The closed loop's window: 1 to MaxInflight at QoS 1/2, none
			// at QoS 0 or in the open loop.
			if want := pub.Max && pub.QoS > 0; (pub.Inflight > 0) != want || pub.Inflight > MaxInflight {
				t.Errorf("bad inflight in %s: %+v", g.Name, pub)
			}
			if pub.Max && p.Duration == 0 {
				t.Errorf("%s: rate: max without a duration", g.Name)
			}
			counted = counted && pub.Count > 0
		}
	}
	if p.Duration == 0 && !counted {
		t.Error("no duration, and a publisher without a count")
	}
	if len(p.Stages) > 0 {
		// Without a top-level stages:, the timeline comes from the groups'
		// lists (names and durations only): their rates are positive.
		positive := false
		for _, g := range p.Groups {
			if g.Publish != nil && len(g.Publish.Stages) > 0 {
				positive = true
			}
		}
		for _, st := range p.Stages {
			if st.Duration < 0 || st.Rate < 0 || st.Every < 0 || (st.Rate > 0 && st.Every > 0) || st.Name == "" {
				t.Errorf("bad stage: %+v", st)
			}
			positive = positive || st.Rate > 0 || st.Every > 0
		}
		if !positive || len(p.Stages) > maxStages || p.Ramp != 0 || p.Duration != StagesTotal(p.Stages) || p.Duration <= 0 {
			t.Errorf("bad stages: %d of them, ramp %v, duration %v", len(p.Stages), p.Ramp, p.Duration)
		}
	}
}
