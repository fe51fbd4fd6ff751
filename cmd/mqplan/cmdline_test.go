package main

import (
	"strings"
	"testing"
)

// TestCommandLine: the command line a result carries is the one typed,
// quoted to paste back, with no secret in it whatever flag carried it.
func TestCommandLine(t *testing.T) {
	tests := []struct {
		name string
		cmd  string
		args []string
		want string
	}{
		{"plain", "run", []string{"--set", "duration=30s", "plans/soak.yaml"}, "mqplan run --set duration=30s plans/soak.yaml"},
		{"quoted", "run", []string{"--set", "description=two words", "it's.yaml"}, `mqplan run --set 'description=two words' 'it'\''s.yaml'`},
		{"URL password", "run", []string{"--broker", "mqtt://user:hunter2@127.0.0.1:1883", "p.yaml"}, "mqplan run --broker 'mqtt://user:***@127.0.0.1:1883' p.yaml"},
		{"password flag", "pub", []string{"-h", "127.0.0.1", "-u", "u", "-P", "hunter2", "-t", "t"}, "mqplan pub -h 127.0.0.1 -u u -P '******' -t t"},
		{"password flag joined", "pub", []string{"--password=hunter2", "-Phunter2"}, "mqplan pub '--password=******' '-P******'"},
		{"set of a secret key", "run", []string{"--set", "groups.pub.password=hunter2", "--set", "api_token=hunter2", "p.yaml"},
			"mqplan run --set 'groups.pub.password=******' --set 'api_token=******' p.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := commandLine(tt.cmd, tt.args)
			if got != tt.want {
				t.Errorf("commandLine = %q, want %q", got, tt.want)
			}
			if strings.Contains(got, "hunter2") {
				t.Errorf("the secret shows in %q", got)
			}
		})
	}
}
