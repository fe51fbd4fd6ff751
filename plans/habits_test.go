package plans

import (
	"strings"
	"testing"
)

// TestLoadHabits checks the answers to the keys and forms users of
// neighbouring tools write first: each problem names what to write
// instead, and an unknown key comes before the missing key it explains.
func TestLoadHabits(t *testing.T) {
	const head = "name: t\ngroups:\n  - name: g\n"
	tests := []struct {
		name, plan string
		// want are substrings of the problems, in the order reported.
		want []string
	}{
		{"emqtt-bench's interval, before the every it explains",
			head + "    publish:\n      topic: t\n      interval: 5s\nduration: 1s\n",
			[]string{`6:7: groups[0].publish: unknown key "interval": did you mean "every"? emqtt-bench's -I/--interval is every here`,
				`6:7: groups[0].publish: missing "every" or "rate"`}},
		{"a typo, before the missing key it explains",
			head + "    publish:\n      topic: t\n      evry: 5s\nduration: 1s\n",
			[]string{`6:7: groups[0].publish: unknown key "evry" (did you mean "every"?)`, `6:7: groups[0].publish: missing "every" or "rate"`}},
		{"a topic typo, before the missing topic",
			head + "    publish:\n      every: 1s\n      topc: t\nduration: 1s\n",
			[]string{`unknown key "topc" (did you mean "topic"?)`, `missing "topic"`}},
		{"clients in a group",
			head + "    clients: 10\n    publish: {topic: t, every: 1s}\nduration: 1s\n",
			[]string{`4:5: groups[0]: unknown key "clients": did you mean "count"?`}},
		{"stages in a group",
			head + "    stages: [{duration: 1s, rate: 10/s}]\n    publish: {topic: t, every: 1s}\nduration: 1s\n",
			[]string{`unknown key "stages": a group's own stages go under its publish: publish.stages`}},
		{"payload_size in a publish",
			head + "    publish: {topic: t, every: 1s, payload_size: 1KB}\nduration: 1s\n",
			[]string{`unknown key "payload_size": did you mean "size"?`}},
		{"an unquoted JSON template with a placeholder",
			head + "    publish:\n      topic: t\n      every: 1s\n      payload: {\"id\": \"%i\", \"seq\": %s}\nduration: 1s\n",
			[]string{`invalid YAML: found character that cannot start any token; quote the payload template: payload: '{"id": "%i", "seq": %s}'`}},
		{"an unquoted JSON template over two lines",
			head + "    publish:\n      topic: t\n      every: 1s\n      payload: {\"id\": \"%i\",\n        \"seq\": %s}\nduration: 1s\n",
			[]string{`invalid YAML: found character that cannot start any token; quote the payload template ('...' around it, or a >- block)`}},
		{"an unquoted JSON template without a placeholder",
			head + "    publish:\n      topic: t\n      every: 1s\n      payload: {\"id\": \"x\"}\nduration: 1s\n",
			[]string{`groups[0].publish.payload: is a YAML mapping, not text: quote the payload template`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadBytes("p.yaml", []byte(tt.plan), LoadOptions{LookupEnv: lookupTestEnv})
			if err == nil {
				t.Fatal("loaded; want problems")
			}
			got := err.Error()
			at := 0
			for _, w := range tt.want {
				i := strings.Index(got[at:], w)
				if i < 0 {
					t.Fatalf("problems lack %q after offset %d (or have it out of order):\n%s", w, at, got)
				}
				at += i + len(w)
			}
		})
	}
}

// TestPayloadHintOnlyInPayloads checks that a syntax error elsewhere
// gets no payload hint.
func TestPayloadHintOnlyInPayloads(t *testing.T) {
	plan := "name: t\ngroups:\n  - name: g\n    client_id: %i\n    publish: {topic: t, every: 1s, payload: x}\nduration: 1s\n"
	_, err := LoadBytes("p.yaml", []byte(plan), LoadOptions{})
	if err == nil || strings.Contains(err.Error(), "payload template") {
		t.Errorf("got %v; want a syntax error without the payload hint", err)
	}
}
