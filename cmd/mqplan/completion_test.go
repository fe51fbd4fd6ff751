package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// shell returns the path of a shell the completion tests run, skipping
// outside CI when it is not installed (.ci/run installs bash, zsh and fish).
func shell(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed, but CI must test its completion: .ci/run installs it", name)
		}
		t.Skipf("%s is not installed (apt-get install %s); skipping its completion test", name, name)
	}
	return p
}

// script writes `mqplan completion SHELL` to a file and returns its path.
func script(t *testing.T, sh string) string {
	t.Helper()
	r := runCmd(t, "completion", sh)
	if r.code != 0 {
		t.Fatalf("completion %s: exit %d\n%s", sh, r.code, r.stderr)
	}
	path := filepath.Join(t.TempDir(), "mqplan."+sh)
	if err := os.WriteFile(path, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCompletionBash runs the bash script's completion function as bash
// would on a Tab, and checks what it offers.
func TestCompletionBash(t *testing.T) {
	bash := shell(t, "bash")
	path := script(t, "bash")
	tests := []struct {
		name  string
		words []string // the command line, the last word being completed
		want  []string // all of these must be offered
		not   []string // none of these may be
	}{
		{"commands", []string{"mqplan", ""}, []string{"run", "validate", "explain", "broker", "conn", "sub", "pub", "version", "completion", "find-max", "merge", "report", "compare"}, nil},
		{"a command's prefix", []string{"mqplan", "ex"}, []string{"explain"}, []string{"run"}},
		{"run's flags", []string{"mqplan", "run", "--"}, []string{"--broker", "--out", "--json", "--quiet", "--set", "--procs", "--help"}, []string{"--listen"}},
		{"a flag's prefix", []string{"mqplan", "run", "--qu"}, []string{"--quiet"}, []string{"--broker"}},
		{"broker's flags", []string{"mqplan", "broker", "--"}, []string{"--listen", "--tls-cert", "--drop-every"}, []string{"--out"}},
		{"compare's flags", []string{"mqplan", "compare", "--"}, []string{"--tolerance", "--fail-on-regression", "--out"}, []string{"--quiet"}},
		{"report and compare", []string{"mqplan", "re"}, []string{"report"}, []string{"compare"}},
		{"emqtt-bench long options", []string{"mqplan", "pub", "--int"}, []string{"--interval", "--interval_of_msg"}, nil},
		{"files after a command", []string{"mqplan", "run", "plans/1to1"}, []string{"plans/1to1-qos1.yaml"}, nil},
		{"the shells after completion", []string{"mqplan", "completion", ""}, []string{"bash", "zsh", "fish"}, []string{"run"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			words := make([]string, len(tt.words))
			for i, w := range tt.words {
				words[i] = "'" + w + "'"
			}
			prog := "source " + path + "; COMP_WORDS=(" + strings.Join(words, " ") + "); COMP_CWORD=" +
				strconv.Itoa(len(tt.words)-1) + `; _mqplan; printf '%s\n' "${COMPREPLY[@]}"`
			cmd := exec.Command(bash, "--norc", "-c", prog)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("bash: %v\n%s", err, out)
			}
			got := strings.Fields(string(out))
			checkOffers(t, got, tt.want, tt.not)
		})
	}
}

// TestCompletionFish asks fish itself what it would complete, with the
// script loaded.
func TestCompletionFish(t *testing.T) {
	fish := shell(t, "fish")
	path := script(t, "fish")
	tests := []struct {
		name, line string
		want, not  []string
	}{
		{"commands", "mqplan ", []string{"run", "validate", "completion", "pub"}, nil},
		{"run's flags", "mqplan run --", []string{"--broker", "--out", "--quiet"}, []string{"--listen"}},
		{"emqtt-bench options", "mqplan sub --to", []string{"--topic"}, nil},
		{"the shells after completion", "mqplan completion ", []string{"bash", "zsh", "fish"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(fish, "--no-config", "-c", "source "+path+"; complete -C '"+tt.line+"'")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("fish: %v\n%s", err, out)
			}
			var got []string
			for _, l := range strings.Split(string(out), "\n") {
				if w, _, _ := strings.Cut(l, "\t"); w != "" {
					got = append(got, w)
				}
			}
			checkOffers(t, got, tt.want, tt.not)
		})
	}
}

// TestCompletionZsh checks that the zsh script parses and names every
// command and flag (zsh's completion system needs a terminal to drive).
func TestCompletionZsh(t *testing.T) {
	zsh := shell(t, "zsh")
	path := script(t, "zsh")
	if out, err := exec.Command(zsh, "-n", path).CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{"#compdef mqplan", "'run:run a plan and print the report'", "'conn:emqtt-bench'\\''s commands", "--out", "--drop-every", "--interval_of_msg"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the zsh script lacks %q", want)
		}
	}
}

// TestCompletionRefusals checks the command's own errors.
func TestCompletionRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no shell", []string{"completion"}, "name one shell: bash, zsh or fish"},
		{"unknown shell", []string{"completion", "tcsh"}, `unknown shell "tcsh": want bash, zsh or fish`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCmd(t, tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want 2 with %q", r.code, r.stderr, tc.stderr)
			}
		})
	}
}

// checkOffers fails unless got holds every want and none of not.
func checkOffers(t *testing.T, got, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%q not offered; offered %q", w, got)
		}
	}
	for _, n := range not {
		if slices.Contains(got, n) {
			t.Errorf("%q offered where it does not apply; offered %q", n, got)
		}
	}
}
