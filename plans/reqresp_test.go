package plans

import (
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/phase"
)

// TestCompileRequests checks what Compile makes of request/response:
// the subscriptions it adds (command filter, response topic), the
// answers each request implies, and the phases' exact request and
// answer counts.
func TestCompileRequests(t *testing.T) {
	tests := []struct {
		name string
		plan string
		// responses is each requester's ExpectedResponses, in order.
		responses []int
		requests  int64 // steady-phase requests
		answers   int64 // steady-phase answers
		err       string
	}{
		{
			name: "1:1 pairs by %i",
			plan: `
groups:
  - {name: dev, count: 3, respond: {topic: "cmd/%i", qos: 1}}
  - {name: be, count: 3, publish: {topic: "cmd/%i", every: 100ms, response_topic: "resp/%i"}}
duration: 1s`,
			responses: []int{1, 1, 1}, requests: 30, answers: 30,
		},
		{
			name: "one backend, a broadcast answered by every device",
			plan: `
groups:
  - {name: dev, count: 4, respond: {topic: "cmd/all"}}
  - {name: be, publish: {topic: "cmd/all", rate: 10/s, response_topic: "resp/be"}}
duration: 2s`,
			responses: []int{4}, requests: 20, answers: 80,
		},
		{
			name: "wildcard responders hear only their own",
			plan: `
groups:
  - {name: dev, count: 2, respond: {topic: "cmd/%i/#"}}
  - {name: be, count: 2, publish: {topic: "cmd/%i/reboot", every: 500ms, response_topic: "resp/%c"}}
duration: 1s`,
			responses: []int{1, 1}, requests: 4, answers: 4,
		},
		{
			name: "a request no responder hears is a plan error",
			plan: `
groups:
  - {name: dev, count: 2, respond: {topic: "cmd/%i"}}
  - {name: be, count: 3, publish: {topic: "cmd/%i", every: 1s, response_topic: "resp/%c"}}
duration: 1s`,
			err: `groups[1].publish.topic: no responder's respond.topic matches "cmd/3"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := LoadBytes("reqresp.yaml", []byte(tt.plan), LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			prog, err := Compile(p, CompileOptions{})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, c := range prog.Clients {
				g := &p.Groups[c.Group]
				switch {
				case c.Publish != nil:
					got = append(got, c.Publish.ExpectedResponses)
					if c.Publish.ResponseTimeout != 5*time.Second || len(c.Subscriptions) != 1 || !c.Subscriptions[0].Response || c.Subscriptions[0].Filter != c.Publish.ResponseTopic {
						t.Errorf("%s: timeout %v, subscriptions %+v", c.ID, c.Publish.ResponseTimeout, c.Subscriptions)
					}
				case g.Respond != nil:
					if len(c.Subscriptions) != 1 || !c.Subscriptions[0].Respond || c.Subscriptions[0].QoS != g.Respond.QoS {
						t.Errorf("%s: subscriptions %+v", c.ID, c.Subscriptions)
					}
				}
			}
			if len(got) != len(tt.responses) {
				t.Fatalf("responses %v, want %v", got, tt.responses)
			}
			for i := range got {
				if got[i] != tt.responses[i] {
					t.Errorf("responses %v, want %v", got, tt.responses)
				}
			}
			st := prog.Phases[phase.Steady]
			if st.Requests != tt.requests || st.Responses != tt.answers || st.Messages != tt.requests {
				t.Errorf("steady: %d messages, %d requests, %d answers; want %d requests, %d answers", st.Messages, st.Requests, st.Responses, tt.requests, tt.answers)
			}
		})
	}
}
