package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/internal/mosquittotest"
)

// TestMergeReproducesRun: mqplan merge of a run's own partial (mqplan run
// --partial) gives the run's table, exit code and JSON report byte for
// byte, on the embedded broker and on Mosquitto, whether the thresholds
// hold (0), one fails (1) or the run could not complete (3).
func TestMergeReproducesRun(t *testing.T) {
	t.Parallel()
	mosq := ""
	if mosquittotest.Binary() != "" || os.Getenv("CI") != "" {
		mosq = mosquittotest.Start(t)
	}
	tests := []struct {
		name   string
		broker string // "" embedded; "mosquitto"
		plan   string
		code   int
	}{
		{"embedded, pass", "", "testdata/cli/pass.yaml", 0},
		{"embedded, a threshold fails", "", "testdata/cli/fail.yaml", 1},
		{"mosquitto, pass", "mosquitto", "testdata/cli/pass.yaml", 0},
		{"mosquitto, a threshold fails", "mosquitto", "testdata/cli/fail.yaml", 1},
		{"unreachable broker, incomplete", "mqtt://127.0.0.1:1", "testdata/cli/pass.yaml", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tok := writeToken(t, dir)
			args := []string{"run", "--quiet", "--partial", filepath.Join(dir, "part.json"), "--token-file", tok, "--json", filepath.Join(dir, "run.json")}
			switch tt.broker {
			case "":
			case "mosquitto":
				if mosq == "" {
					t.Skip("mosquitto is not installed")
				}
				args = append(args, "--broker", mosq)
			default:
				args = append(args, "--broker", tt.broker)
			}
			run := runCmd(t, append(args, tt.plan)...)
			if run.code != tt.code {
				t.Fatalf("run: exit %d, want %d\n%s\n%s", run.code, tt.code, run.stdout, run.stderr)
			}
			merge := runCmd(t, "merge", "--token-file", tok, "--json", filepath.Join(dir, "merged.json"), filepath.Join(dir, "part.json"))
			if merge.code != run.code {
				t.Fatalf("merge: exit %d, the run's %d\n%s\n%s", merge.code, run.code, merge.stdout, merge.stderr)
			}
			if merge.stdout != run.stdout {
				t.Errorf("merge's table differs from the run's:\nrun:\n%s\nmerge:\n%s", run.stdout, merge.stdout)
			}
			a, errA := os.ReadFile(filepath.Join(dir, "run.json"))
			b, errB := os.ReadFile(filepath.Join(dir, "merged.json"))
			if errA != nil || errB != nil {
				t.Fatal(errA, errB)
			}
			// The run records the command line that made it; a merge is
			// another command and records none (docs/results.md), so
			// that one key is left out of the comparison.
			a = commandLineKey.ReplaceAll(a, nil)
			if bytes.Contains(b, []byte(`"command_line"`)) {
				t.Errorf("the merged JSON records a command line")
			}
			if string(a) != string(b) {
				t.Errorf("merged JSON differs from the run's (%d and %d bytes)", len(a), len(b))
			}
			p, err := os.ReadFile(filepath.Join(dir, "part.json"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(p), "hunter2-secret") {
				t.Errorf("the partial holds the plan's password")
			}
		})
	}
}

// TestMergeRefuses: parts that are not a whole run are never judged as
// one: a missing shard is exit 3 (or INCOMPLETE with --allow-missing), a
// shard given twice or a file that is no partial is exit 2.
func TestMergeRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	part := filepath.Join(dir, "part.json")
	if r := runCmd(t, "run", "--quiet", "--partial", part, "testdata/cli/pass.yaml"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	data, err := os.ReadFile(part)
	if err != nil {
		t.Fatal(err)
	}
	of2 := filepath.Join(dir, "part-0-of-2.json")
	if err := os.WriteFile(of2, []byte(strings.Replace(string(data), `"count": 1`, `"count": 2`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	forged := filepath.Join(dir, "part-0-of-2-forged.json")
	if err := os.WriteFile(forged, []byte(strings.Replace(string(data), `"count": 1`, `"count": 2, "assignment": "auto-v1", "assign_sha256": "0123"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "report.json")
	if r := runCmd(t, "merge", "--insecure-parts", "--json", report, part); r.code != 0 {
		t.Fatalf("merge: exit %d\n%s", r.code, r.stderr)
	}
	type merge struct {
		name   string
		args   []string // a merge's arguments, or a whole run command line
		code   int
		stderr string
		stdout string
	}
	tests := []merge{
		{"a shard missing", []string{of2}, 3, "shard 1 of 2 missing: the expected deliveries of their publishers are unknown, so loss cannot be computed", ""},
		{"a shard missing, allowed", []string{"--allow-missing", of2}, 3, "", "shard 1 of 2 missing"},
		{"an assignment the plan does not give", []string{"--allow-missing", forged}, 2, "but the run's plan testdata/cli/pass.yaml gives auto-v1", ""},
		{"a shard twice", []string{part, part}, 2, "shard 0 of 1 given twice", ""},
		{"a saved report", []string{report}, 2, `no "mqplan_partial" version`, ""},
		{"no file", []string{filepath.Join(dir, "nope.json")}, 2, "no such file", ""},
		{"no arguments", nil, 2, "expected the partial result files of a run", ""},
	}
	// --partial is checked before anything connects.
	tests = append(tests,
		merge{"run --partial into a missing directory", []string{"run", "--partial", filepath.Join(dir, "nope", "p.json"), "testdata/cli/pass.yaml"}, 2, "--partial " + filepath.Join(dir, "nope", "p.json"), ""},
		merge{"run --partial to standard output", []string{"run", "--partial", "-", "testdata/cli/pass.yaml"}, 2, "standard output carries the report", ""})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if args == nil || args[0] != "run" {
				// Unsigned parts (a run without a token), some edited:
				// what is checked here is what the merge makes of them.
				args = append([]string{"merge", "--insecure-parts"}, args...)
			}
			r := runCmd(t, args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) || !strings.Contains(r.stdout, tt.stdout) {
				t.Errorf("exit %d, want %d with %q / %q\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, tt.stderr, tt.stdout, r.stdout, r.stderr)
			}
		})
	}
}

// commandLineKey is the JSON result's command_line member, on its line.
var commandLineKey = regexp.MustCompile(`(?m)^\s*"command_line": .*\n`)
