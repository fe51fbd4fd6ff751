package plans

// builtinChecks are the integrity checks every run must pass, whatever its
// thresholds say: a run that did not do what its plan said (messages the
// schedule called for never sent, connections refused, clients lost and
// never back, deliveries lost, duplicated or corrupted, a QoS downgraded,
// publishes or subscriptions the broker refused) must not pass because
// nobody thought of writing a threshold for it. A plan that writes its own
// threshold on one of a check's metrics, in any scope, decides for itself
// instead: a fault-injection plan can say `unsent < 100`, a QoS 0 plan
// `loss_rate < 0.001`, which then replaces `lost == 0`.
var builtinChecks = []struct {
	expr string
	// metrics are those whose threshold in the plan replaces the check:
	// its own, and the others that judge the same thing (loss_rate for
	// lost).
	metrics []string
}{
	{"unsent == 0", []string{"unsent"}},
	{"connect.failed == 0", []string{"connect.failed"}},
	{"clients.lost == 0", []string{"clients.lost"}},
	{"lost == 0", []string{"lost", "loss_rate", "lost_unsent", "lost_unacked", "lost_broker"}},
	{"duplicates == 0", []string{"duplicates", "dup_rate"}},
	{"corrupted == 0", []string{"corrupted"}},
	{"unexpected == 0", []string{"unexpected"}},
	{"qos_downgrades == 0", []string{"qos_downgrades"}},
	{"errors == 0", []string{"errors"}},
}

// BuiltinThresholds compiles the built-in integrity checks that the
// plan's own thresholds (user, as compiled) leave to mqplan: each check
// none of whose metrics a user threshold reads. They are marked Builtin so
// that reports can say why a run failed without the plan asking.
func BuiltinThresholds(p *Plan, user []*Threshold) []*Threshold {
	read := map[string]bool{}
	for _, t := range user {
		for _, ref := range t.Reads {
			read[ref.Metric] = true
		}
	}
	env := newThresholdEnv(p)
	var out []*Threshold
checks:
	for _, c := range builtinChecks {
		for _, m := range c.metrics {
			if read[m] {
				continue checks
			}
		}
		t, err := env.compile(ThresholdSource{Expr: c.expr})
		if err != nil {
			continue // a catalogue metric always compiles; the test pins it
		}
		t.Builtin = true
		out = append(out, t)
	}
	return out
}
