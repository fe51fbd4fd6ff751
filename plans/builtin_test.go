package plans

import (
	"slices"
	"testing"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/threshold"
)

// TestBuiltinThresholds checks which built-in integrity checks a plan gets:
// all of them, less those whose metric one of its own thresholds reads, in
// any scope.
func TestBuiltinThresholds(t *testing.T) {
	all := []string{"unsent == 0", "connect.failed == 0", "clients.lost == 0", "lost == 0", "duplicates == 0",
		"corrupted == 0", "unexpected == 0", "qos_downgrades == 0", "errors == 0"}
	without := func(drop ...string) []string {
		var out []string
		for _, e := range all {
			if !slices.Contains(drop, e) {
				out = append(out, e)
			}
		}
		return out
	}
	tests := []struct {
		name  string
		exprs []string
		want  []string
	}{
		{"no thresholds: every check", nil, all},
		{"unrelated thresholds: every check", []string{"p99 < 10ms", "recv_rate > 5"}, all},
		{"the plan's own unsent threshold decides", []string{"unsent < 100"}, without("unsent == 0")},
		{"a group-scoped threshold counts too", []string{"groups.sub.connect.failed <= 2"}, without("connect.failed == 0")},
		{"a phase-scoped threshold counts too", []string{"phases.warmup.corrupted == 0 and errors < 5"}, without("corrupted == 0", "errors == 0")},
		{"loss_rate replaces lost == 0", []string{"loss_rate < 0.001"}, without("lost == 0")},
		{"lost_broker replaces lost == 0", []string{"lost_broker == 0"}, without("lost == 0")},
		{"dup_rate replaces duplicates == 0", []string{"dup_rate < 0.01"}, without("duplicates == 0")},
		{"every metric covered: none", []string{"unsent < 1", "connect.failed < 1", "clients.lost < 1", "lost < 1",
			"duplicates < 1", "corrupted < 1", "unexpected < 1", "qos_downgrades < 1", "errors < 1"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := thTestPlan(tt.exprs...)
			user, errs := CompileThresholds(p)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			var got []string
			for _, b := range BuiltinThresholds(user) {
				if !b.Builtin || len(b.Reads) != 1 {
					t.Errorf("%q: builtin %v, reads %v", b.Source.Expr, b.Builtin, b.Reads)
				}
				got = append(got, b.Source.Expr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("built-in checks %q, want %q", got, tt.want)
			}
		})
	}
}

// TestBuiltinThresholdsJudge checks that each built-in check fails on its
// fault and passes on a clean run.
func TestBuiltinThresholdsJudge(t *testing.T) {
	ths := BuiltinThresholds(nil)
	if len(ths) != len(builtinChecks) {
		t.Fatalf("%d checks compiled, want %d: a built-in expression no longer compiles", len(ths), len(builtinChecks))
	}
	clean := metric.Set{"unsent": 0, "connect.failed": 0, "clients.lost": 0, "lost": 0, "duplicates": 0,
		"corrupted": 0, "unexpected": 0, "qos_downgrades": 0, "errors": 0}
	for _, th := range ths {
		m := threshold.Measured{Top: clean}
		if r := th.Eval(m); !r.Pass {
			t.Errorf("%s fails on a clean run: %s", th.Source.Expr, r.Reason)
		}
		faulty := metric.Set{}
		for k, v := range clean {
			faulty[k] = v
		}
		faulty[th.Reads[0].Metric] = 3
		if r := th.Eval(threshold.Measured{Top: faulty}); r.Pass {
			t.Errorf("%s passes with %s = 3", th.Source.Expr, th.Reads[0].Metric)
		}
	}
}

// TestBuiltinRequestThresholds: a plan that sends requests gets
// rtt.timeouts == 0 and responses_duplicates == 0 as built-in checks
// (unless its own thresholds read those metrics), so a run whose answers
// never came cannot pass for want of a threshold; a plan without requests
// does not get them (they would fail for want of samples).
func TestBuiltinRequestThresholds(t *testing.T) {
	const reqPlan = `
broker: {url: embedded, protocol: 5}
groups:
  - name: dev
    count: 1
    respond: {topic: "cmd/%i"}
  - name: be
    count: 1
    publish: {topic: "cmd/%i", every: 100ms, response_topic: "resp/%c"}
duration: 2s
drain: 1s
`
	const plainPlan = `
broker: {url: embedded, protocol: 5}
groups:
  - name: sub
    count: 1
    subscribe: {topic: "t/#"}
  - name: pub
    count: 1
    publish: {topic: "t/%i", every: 100ms}
duration: 2s
`
	tests := []struct {
		name, plan string
		thresholds []string
		want       []string // the request built-ins among the plan's thresholds
	}{
		{name: "requests, no thresholds", plan: reqPlan, want: []string{"rtt.timeouts == 0", "responses_duplicates == 0"}},
		{name: "requests, unrelated thresholds", plan: reqPlan, thresholds: []string{"rtt.p99 < 1s"}, want: []string{"rtt.timeouts == 0", "responses_duplicates == 0"}},
		{name: "own rtt.timeouts decides", plan: reqPlan, thresholds: []string{"rtt.timeouts < 5"}, want: []string{"responses_duplicates == 0"}},
		{name: "own responses_late decides timeouts", plan: reqPlan, thresholds: []string{"groups.be.responses_late < 5"}, want: []string{"responses_duplicates == 0"}},
		{name: "own responses_duplicates decides", plan: reqPlan, thresholds: []string{"responses_duplicates < 2"}, want: []string{"rtt.timeouts == 0"}},
		{name: "no requests, none", plan: plainPlan, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.plan
			if len(tt.thresholds) > 0 {
				src += "thresholds:\n"
				for _, e := range tt.thresholds {
					src += "  - " + e + "\n"
				}
			}
			p, err := LoadBytes("r.yaml", []byte(src), LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			prog, err := Compile(p, CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, th := range prog.Thresholds {
				if th.Builtin && (th.Source.Expr == "rtt.timeouts == 0" || th.Source.Expr == "responses_duplicates == 0") {
					got = append(got, th.Source.Expr)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("request built-ins %q, want %q", got, tt.want)
			}
		})
	}
}

// TestBuiltinListenThresholds: a plan that subscribes and does not
// publish (what mqplan sub runs) gets received > 0 as a built-in check,
// unless its own thresholds read received, received_bytes or recv_rate,
// so that a subscriber that heard nothing cannot pass; a plan with a
// publisher (judged by lost == 0) or without subscribers does not get it.
func TestBuiltinListenThresholds(t *testing.T) {
	const listen = `
broker: {url: embedded}
groups:
  - name: sub
    count: 2
    subscribe: {topic: "$share/g/t/#"}
`
	const withPub = listen + `  - name: pub
    count: 1
    publish: {topic: "t/%i", every: 100ms}
`
	const connOnly = `
broker: {url: embedded}
groups:
  - name: conn
    count: 2
`
	tests := []struct {
		name, plan string
		thresholds []string
		want       bool
	}{
		{name: "listens only, no thresholds", plan: listen, want: true},
		{name: "listens only, unrelated thresholds", plan: listen, thresholds: []string{"p99 < 1s", "errors < 3"}, want: true},
		{name: "own received decides", plan: listen, thresholds: []string{"received >= 0"}},
		{name: "own group-scoped received decides", plan: listen, thresholds: []string{"groups.sub.received > 100"}},
		{name: "own recv_rate decides", plan: listen, thresholds: []string{"recv_rate > 50"}},
		{name: "own received_bytes decides", plan: listen, thresholds: []string{"received_bytes > 1KiB"}},
		{name: "a publisher: lost == 0 judges it", plan: withPub},
		{name: "no subscriber", plan: connOnly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.plan + "duration: 2s\n"
			if len(tt.thresholds) > 0 {
				src += "thresholds:\n"
				for _, e := range tt.thresholds {
					src += "  - " + e + "\n"
				}
			}
			p, err := LoadBytes("l.yaml", []byte(src), LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			prog, err := Compile(p, CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := slices.ContainsFunc(prog.Thresholds, func(th *Threshold) bool { return th.Builtin && th.Source.Expr == "received > 0" })
			if got != tt.want {
				t.Errorf("received > 0 among the built-in checks: %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBuiltinListenThresholdsJudge checks that received > 0 fails on
// nothing received and passes on one delivery.
func TestBuiltinListenThresholdsJudge(t *testing.T) {
	ths := BuiltinListenThresholds(nil)
	if len(ths) != len(builtinListenChecks) {
		t.Fatalf("%d checks compiled, want %d: a built-in expression no longer compiles", len(ths), len(builtinListenChecks))
	}
	for _, tc := range []struct {
		received int64
		pass     bool
	}{{0, false}, {1, true}} {
		if r := ths[0].Eval(threshold.Measured{Top: metric.Set{"received": tc.received}}); r.Pass != tc.pass {
			t.Errorf("%s with received = %d: pass %v, want %v (%s)", ths[0].Source.Expr, tc.received, r.Pass, tc.pass, r.Reason)
		}
	}
}
