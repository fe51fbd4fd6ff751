package partial

import (
	"strings"
	"testing"

	"github.com/mqplan/mqplan/plans"
)

// TestPlanSourceRedacts: a partial carries the plan's text and overrides
// without any password or URL user information, by whatever route they
// came, while ${VAR} references stay for the merge to resolve; and the
// redacted plan still loads.
func TestPlanSourceRedacts(t *testing.T) {
	const canary = "CANARY-pw-7f3a"
	src := "name: p\nbroker:\n  url: mqtt://127.0.0.1:1883\ngroups:\n  - name: sub\n    count: 1\n    username: bob\n    password: " + canary + "\n    subscribe: {topic: t}\n  - name: pub\n    count: 1\n    password: ${MQTT_PASSWORD}\n    publish: {topic: t, every: 1s}\nduration: 1s\n"
	sets := []string{"groups.sub.password=" + canary, "groups.pub.password=${PW}", "duration=2s"}
	plan, err := plans.LoadBytes("p.yaml", []byte(src), plans.LoadOptions{LookupEnv: func(string) (string, bool) { return "x", true }})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := plans.Compile(plan, plans.CompileOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	ps := NewPlanSource("p.yaml", []byte(src), sets, prog)
	all := ps.Source + strings.Join(ps.Sets, "\n")
	if strings.Contains(all, canary) {
		t.Fatalf("the canary password is in the partial's plan:\n%s", all)
	}
	for _, want := range []string{"${MQTT_PASSWORD}", "groups.pub.password=${PW}", "duration=2s", "username: bob"} {
		if !strings.Contains(all, want) {
			t.Errorf("%q lost from the plan:\n%s", want, all)
		}
	}
	if r := redactSet("broker.url=mqtt://u:" + canary + "@h:1883"); strings.Contains(r, canary) {
		t.Errorf("--set broker.url kept its password: %s", r)
	}
	if r := redactSource([]byte("broker:\n  url: mqtt://u:" + canary + "@h:1883\n")); strings.Contains(r, canary) {
		t.Errorf("the plan's broker.url kept its password: %s", r)
	}
	if _, err := plans.LoadBytes(ps.File, []byte(ps.Source), plans.LoadOptions{Sets: ps.Sets, LookupEnv: func(string) (string, bool) { return "x", true }}); err != nil {
		t.Errorf("the redacted plan does not load: %v", err)
	}
}
