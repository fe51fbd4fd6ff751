package plans

import (
	"sync"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/threshold"
)

// builtinChecks are the integrity checks every run must pass, whatever its
// thresholds say: a run that did not do what its plan said (messages the
// schedule called for never sent, connections refused, clients lost and
// never back, deliveries lost, duplicated or corrupted, a QoS downgraded,
// publishes or subscriptions the broker refused) must not pass because
// nobody thought of writing a threshold for it.
//
// Each check is `m == 0` for the first metric m of its list. A plan that
// writes its own threshold on any metric of the list, in any scope,
// decides for itself instead: a fault-injection plan can say
// `unsent < 100`, a QoS 0 plan `loss_rate < 0.001`, which then replaces
// `lost == 0` (the rest of a list are the metrics that judge the same
// thing as the first).
var builtinChecks = [][]metric.Name{
	{metric.Unsent},
	{metric.ConnectFailed},
	{metric.ClientsLost},
	{metric.Lost, metric.LossRate, metric.LostUnsent, metric.LostUnacked, metric.LostBroker, metric.LostLate},
	{metric.Duplicates, metric.DupRate},
	{metric.Corrupted},
	{metric.Unexpected},
	{metric.QoSDowngrades},
	{metric.Errors},
}

// builtinRequestChecks are the built-in checks of a plan that sends
// requests (publish.response_topic), on the same terms: an answer that
// never came, or came twice, must fail the run as a lost or duplicated
// delivery does. They are not in builtinChecks because the metrics have
// no value in a plan without requests (a check on them would fail for
// want of samples).
var builtinRequestChecks = [][]metric.Name{
	{metric.RTTTimeouts, metric.Responses, metric.ResponsesLate},
	{metric.ResponsesDuplicates},
}

// builtinListenChecks are the built-in checks of a plan that only
// listens (it subscribes and nothing in it publishes: what mqplan sub
// runs), on the same terms: such a run expects nothing, so no loss can
// fail it, and without this check a subscriber that heard nothing at all
// (a shared subscription the broker took for a plain topic, a filter with
// a typo) would pass. Its expression is `received > 0`, not `== 0`
// (listenCmp).
var builtinListenChecks = [][]metric.Name{
	{metric.Received, metric.ReceivedBytes, metric.RecvRate},
}

// The comparisons of the built-in checks' expressions: most say a fault
// never happened, the listening check that something arrived.
const (
	faultCmp  = " == 0"
	listenCmp = " > 0"
)

// builtinExpr is the expression of checks[i]: its first metric, then cmp.
func builtinExpr(checks [][]metric.Name, i int, cmp string) string {
	return string(checks[i][0]) + cmp
}

// compileBuiltins compiles a list of built-in checks, once per process:
// they read only top-level metrics, so one compilation serves every plan.
// An entry is nil if its check did not compile, which cannot happen for a
// catalogue metric (TestBuiltinThresholdsJudge pins it).
func compileBuiltins(checks [][]metric.Name, cmp string) func() []*threshold.Threshold {
	return sync.OnceValue(func() []*threshold.Threshold {
		env := threshold.NewEnv(threshold.Scopes{Phases: phase.Names()})
		out := make([]*threshold.Threshold, len(checks))
		for i := range checks {
			out[i], _ = env.Compile(builtinExpr(checks, i, cmp))
		}
		return out
	})
}

var (
	compiledBuiltins        = compileBuiltins(builtinChecks, faultCmp)
	compiledRequestBuiltins = compileBuiltins(builtinRequestChecks, faultCmp)
	compiledListenBuiltins  = compileBuiltins(builtinListenChecks, listenCmp)
)

// BuiltinThresholds returns the built-in integrity checks that the plan's
// own thresholds (user, as compiled) leave to mqplan: each check none of
// whose metrics a user threshold reads in this run (reading the baseline's
// lost says nothing about this run's, so it leaves lost == 0 in place). They are marked Builtin so that
// reports can say why a run failed without the plan asking.
func BuiltinThresholds(user []*Threshold) []*Threshold {
	return builtins(user, builtinChecks, faultCmp, compiledBuiltins())
}

// BuiltinRequestThresholds returns the built-in checks of a plan that
// sends requests (rtt.timeouts == 0, responses_duplicates == 0) that its
// own thresholds (user) leave to mqplan, as BuiltinThresholds does.
func BuiltinRequestThresholds(user []*Threshold) []*Threshold {
	return builtins(user, builtinRequestChecks, faultCmp, compiledRequestBuiltins())
}

// BuiltinListenThresholds returns the built-in check of a plan that only
// listens (ListensOnly), received > 0, unless its own thresholds (user)
// read received, received_bytes or recv_rate, as BuiltinThresholds does:
// a plan that accepts hearing nothing says so with a threshold of its
// own, such as received >= 0 (what mqplan sub --allow-empty writes).
func BuiltinListenThresholds(user []*Threshold) []*Threshold {
	return builtins(user, builtinListenChecks, listenCmp, compiledListenBuiltins())
}

// ListensOnly reports whether the plan subscribes and nothing in it
// publishes (no group has publish:): its deliveries can only come from
// another process (mqplan sub beside mqplan pub), so it expects none and
// measures what arrives.
func ListensOnly(p *Plan) bool {
	listens := false
	for i := range p.Groups {
		g := &p.Groups[i]
		if g.Publish != nil {
			return false
		}
		listens = listens || (g.Count > 0 && subscribes(g))
	}
	return listens
}

// builtins returns the checks of the list none of whose metrics a user
// threshold reads in this run.
func builtins(user []*Threshold, checks [][]metric.Name, cmp string, compiled []*threshold.Threshold) []*Threshold {
	read := map[metric.Name]bool{}
	for _, t := range user {
		for _, ref := range t.Reads {
			if !ref.Baseline {
				read[ref.Metric] = true
			}
		}
	}
	var out []*Threshold
checks:
	for i, metrics := range checks {
		for _, m := range metrics {
			if read[m] {
				continue checks
			}
		}
		if t := compiled[i]; t != nil {
			out = append(out, &Threshold{Threshold: t, Source: ThresholdSource{Expr: builtinExpr(checks, i, cmp)}, Builtin: true})
		}
	}
	return out
}
