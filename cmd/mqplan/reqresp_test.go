package main

import "testing"

// TestRequestResponseCommands checks request/response as a user meets it
// on the command line: explain counts the requests and answers, and the
// plan at MQTT 3.1.1 is refused (exit 2) with both keys positioned.
func TestRequestResponseCommands(t *testing.T) {
	runCmdCases(t, []cmdCase{
		{
			name: "explain counts requests and answers",
			args: []string{"explain", "plans/command-response.yaml"},
			want: []string{
				"responders devices: 20 clients subscribed to cmd/%i at QoS 1",
				"requesters backend: 20 clients, answers on resp/%c within 2s, answers per request: 1",
				"steady         200        200      4000              4000",
			},
		},
		{
			name: "MQTT 3.1.1 is a positioned plan error",
			args: []string{"validate", "--set", "broker.protocol=4", "plans/command-response.yaml"},
			code: 2,
			want: []string{
				"plans/command-response.yaml:17:5: groups[0].respond: is MQTT 5 request/response",
				"plans/command-response.yaml:29:7: groups[1].publish.response_topic: is MQTT 5 request/response",
			},
		},
	})
}
