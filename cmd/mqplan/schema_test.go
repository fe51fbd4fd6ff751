package main

import (
	"os"
	"strings"
	"testing"
)

func TestSchemaCommand(t *testing.T) {
	committed, err := os.ReadFile("docs/mqplan-plan.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // the whole of it, when set
		has    []string
		stderr []string
	}{
		{name: "prints the committed schema", args: []string{"schema"}, code: 0, stdout: string(committed)},
		{name: "help", args: []string{"schema", "--help"}, code: 0, stderr: []string{"Usage: mqplan schema", "yaml-language-server", "Examples:\n  mqplan schema > "}},
		{name: "an argument", args: []string{"schema", "plan.yaml"}, code: 2, stderr: []string{"mqplan: schema: takes no arguments, got plan.yaml"}},
		{name: "an unknown flag", args: []string{"schema", "--out", "x"}, code: 2, stderr: []string{"-out"}},
		{name: "listed in the usage", args: []string{"help"}, code: 0, has: []string{"mqplan schema "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if tt.stdout != "" && r.stdout != tt.stdout {
				t.Errorf("stdout is not docs/mqplan-plan.schema.json (%d bytes, want %d)", len(r.stdout), len(tt.stdout))
			}
			for _, s := range tt.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
				}
			}
			for _, s := range tt.has {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
		})
	}
}
