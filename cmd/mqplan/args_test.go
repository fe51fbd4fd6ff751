package main

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
)

// TestFlagsAnywhere checks that flags work before, between and after the
// plan files, that "--" ends them, and that an unknown flag is named
// wherever it stands.
func TestFlagsAnywhere(t *testing.T) {
	const pass = "testdata/cli/pass.yaml"
	tests := []struct {
		name      string
		args      []string
		code      int
		stdout    string // substrings
		stderr    string
		notStderr string
	}{
		{name: "run PLAN --quiet", args: []string{"run", pass, "--quiet"},
			code: 0, stdout: "PASS", notStderr: "[steady"},
		{name: "run PLAN --bogus names the flag", args: []string{"run", pass, "--bogus"},
			code: 2, stderr: "unknown flag --bogus"},
		{name: "run PLAN --json without its value", args: []string{"run", pass, "--json"},
			code: 2, stderr: "--json needs a value"},
		{name: "run with two plans names both", args: []string{"run", pass, "--quiet", "plans/1to1-qos1.yaml"},
			code: 2, stderr: "expected one plan file, got 2 arguments: " + pass + " plans/1to1-qos1.yaml"},
		{name: "explain PLAN --broker URL", args: []string{"explain", pass, "--broker", "mqtt://127.0.0.1:1884"},
			code: 0, stdout: "broker mqtt://127.0.0.1:1884"},
		{name: "explain PLAN --broker=URL", args: []string{"explain", pass, "--broker=mqtt://127.0.0.1:1885"},
			code: 0, stdout: "broker mqtt://127.0.0.1:1885"},
		{name: "explain PLAN --help", args: []string{"explain", pass, "--help"},
			code: 0, stderr: "Usage: mqplan explain"},
		{name: "validate A --set B: the override applies to both", args: []string{"validate", pass, "--set", "groups.nope.count=3", "plans/1to1-qos1.yaml"},
			code: 2, stderr: `no group named "nope"`, notStderr: "open --set"},
		{name: "validate A --set B, good override", args: []string{"validate", pass, "--set", "duration=2s", "plans/1to1-qos1.yaml"},
			code: 0, stdout: "plans/1to1-qos1.yaml: ok"},
		{name: "-- ends the flags", args: []string{"validate", pass, "--", "--quiet"},
			code: 2, stderr: "open --quiet: no such file or directory"},
		{name: "- alone is a file (standard input)", args: []string{"validate", "-"},
			code: 2, stderr: "-:1:1:"},
		{name: "broker with an argument after the flags", args: []string{"broker", "--listen", "127.0.0.1:0", "extra"},
			code: 2, stderr: "unexpected arguments: extra"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, r.stdout)
			}
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, r.stderr)
			}
			if tt.notStderr != "" && strings.Contains(r.stderr, tt.notStderr) {
				t.Errorf("stderr has %q:\n%s", tt.notStderr, r.stderr)
			}
		})
	}
}

func TestSplitFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Bool("quiet", false, "")
	fs.String("json", "", "")
	var sets stringList
	fs.Var(&sets, "set", "")
	tests := []struct {
		name        string
		in          []string
		flags, args []string
	}{
		{"flags first", []string{"--quiet", "--json", "x", "p"}, []string{"--quiet", "--json", "x"}, []string{"p"}},
		{"flags last", []string{"p", "--quiet", "-json", "x"}, []string{"--quiet", "-json", "x"}, []string{"p"}},
		{"a value that looks like a file is the flag's", []string{"--set", "a=b", "p"}, []string{"--set", "a=b"}, []string{"p"}},
		{"name=value takes nothing more", []string{"--json=x", "p"}, []string{"--json=x"}, []string{"p"}},
		{"a boolean takes no value", []string{"--quiet", "p"}, []string{"--quiet"}, []string{"p"}},
		{"-- ends the flags", []string{"p", "--", "--quiet", "-"}, []string{}, []string{"p", "--quiet", "-"}},
		{"- is an argument", []string{"-", "--quiet"}, []string{"--quiet"}, []string{"-"}},
		{"an unknown flag is kept for Parse to name", []string{"p", "--nope", "q"}, []string{"--nope"}, []string{"p", "q"}},
		{"a value flag at the end takes nothing", []string{"p", "--json"}, []string{"--json"}, []string{"p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flags, args := splitFlags(fs, tt.in)
			if len(flags) == 0 && len(tt.flags) == 0 {
				flags = tt.flags
			}
			if !reflect.DeepEqual(flags, tt.flags) || !reflect.DeepEqual(args, tt.args) {
				t.Errorf("got flags %q args %q, want %q %q", flags, args, tt.flags, tt.args)
			}
		})
	}
}
