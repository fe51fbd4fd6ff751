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
	if r := redactSet("groups.sub.password=${PW:-" + canary + "}"); strings.Contains(r, canary) {
		t.Errorf("a ${VAR:-default} password kept its default: %s", r)
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

// TestRedactSourceInPlace: secrets are replaced where they stand, every
// other byte kept (the report's positions stay the run's), whatever the
// scalar's quoting.
func TestRedactSourceInPlace(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"plain", "a: 1\npassword: s3cret # hm\nb: 2\n", "a: 1\npassword: \"REDACTED\" # hm\nb: 2\n"},
		{"double quoted", "password: \"s\\\"3\"\nb: 2\n", "password: \"REDACTED\"\nb: 2\n"},
		{"single quoted", "password: 's''3'\nb: 2\n", "password: \"REDACTED\"\nb: 2\n"},
		{"in a flow mapping", "g: {password: s3, topic: t}\n", "g: {password: \"REDACTED\", topic: t}\n"},
		{"a URL's user information", "url: mqtt://u:s3@h:1883\n", "url: \"mqtt://u:***@h:1883\"\n"},
		{"a reference stays", "password: ${PW}\n", "password: ${PW}\n"},
		{"nothing secret", "name: x\n", "name: x\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redactSource([]byte(tt.src)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
