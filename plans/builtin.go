package plans

// builtinChecks are the integrity checks every run must pass, whatever its
// thresholds say: a run that did not do what its plan said (messages the
// schedule called for never sent, connections refused, clients lost and
// never back, payloads corrupted, publishes or subscriptions the broker
// refused) must not pass because nobody thought of
// writing a threshold for it. A plan that writes its own threshold on one
// of these metrics, in any scope, decides for itself instead (a
// fault-injection plan can say `unsent < 100`).
var builtinChecks = []struct{ metric, expr string }{
	{"unsent", "unsent == 0"},
	{"connect.failed", "connect.failed == 0"},
	{"clients.lost", "clients.lost == 0"},
	{"corrupted", "corrupted == 0"},
	{"errors", "errors == 0"},
}

// BuiltinThresholds compiles the built-in integrity checks that the
// plan's own thresholds (user, as compiled) leave to mqplan: each check
// whose metric no user threshold reads. They are marked Builtin so that
// reports can say why a run failed without the plan asking.
func BuiltinThresholds(p *Plan, user []*Threshold) []*Threshold {
	read := map[string]bool{}
	for _, t := range user {
		for _, ref := range t.Reads {
			read[ref.Metric] = true
		}
	}
	env := newThresholdEnv(p)
	var out []*Threshold
	for _, c := range builtinChecks {
		if read[c.metric] {
			continue
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
