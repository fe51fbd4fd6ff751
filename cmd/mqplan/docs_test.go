package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/internal/golden"
)

// cliReferencePath is the CLI reference, generated from the commands' own
// --help (renderCLIReference); `go test ./cmd/mqplan -run CLIReference
// -update` rewrites it.
const cliReferencePath = "docs/cli.md"

// TestCLIReference: docs/cli.md is exactly what every command's --help
// says, so a flag added, removed or reworded shows up in the reference or
// fails here until it is regenerated.
func TestCLIReference(t *testing.T) {
	t.Parallel()
	golden.Check(t, cliReferencePath, renderCLIReference(t))
}

// renderCLIReference renders the top-level usage and each command's
// --help, in the order the usage lists them. `mqplan version` has no help
// of its own (it prints the build's version, which differs per build), so
// it gets its summary line from the usage.
func renderCLIReference(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("# Command-line reference\n\n")
	b.WriteString("Generated from the commands' own `--help` output and checked against it by the test suite:\n")
	b.WriteString("what is here is what the installed `mqplan` accepts. Do not edit by hand.\n")
	b.WriteString("Exit codes are in the [plan reference](plan-format.md#exit-codes); how the outputs look is in\n")
	b.WriteString("[outputs](outputs.md).\n\n")
	cmds := usageCommands()
	for _, c := range cmds {
		fmt.Fprintf(&b, "- [`mqplan %s`](#mqplan-%s): %s\n", c.Name, c.Name, c.Summary)
	}
	b.WriteString("\n## mqplan\n\n```text\n" + usage + "```\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "\n## mqplan %s\n\n", c.Name)
		if c.Name == "version" {
			fmt.Fprintf(&b, "Usage: `mqplan version` (or `mqplan --version`)\n\n%s.\n", strings.ToUpper(c.Summary[:1])+c.Summary[1:])
			continue
		}
		r := runCmd(t, c.Name, "--help")
		if r.code != 0 {
			t.Fatalf("mqplan %s --help: exit %d\n%s%s", c.Name, r.code, r.stdout, r.stderr)
		}
		help := strings.TrimRight(r.stdout+r.stderr, "\n")
		b.WriteString("```text\n" + help + "\n```\n")
	}
	return b.Bytes()
}

// usageCommandLine finds a command of the top-level usage, "  mqplan
// NAME[|NAME] ... summary"; unlike the completion's pattern it takes
// names with a dash (find-max).
var usageCommandLine = regexp.MustCompile(`(?m)^  mqplan ([a-z|-]+)(?: [^ ]+)*?\s{2,}(\S.*)$`)

// usageCommands lists the commands the top-level usage names, each with
// its summary, in the usage's order.
func usageCommands() []completionCommand {
	var out []completionCommand
	for _, m := range usageCommandLine.FindAllStringSubmatch(usage, -1) {
		for _, name := range strings.Split(m[1], "|") {
			out = append(out, completionCommand{Name: name, Summary: strings.TrimSpace(m[2])})
		}
	}
	return out
}

// userDocs lists the user documentation: README.md and every file under
// docs/, whatever its extension (nothing under docs/ is left out).
func userDocs(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir("docs", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// internalRefs finds what user docs must not name: the project's issue
// numbers ("issue 10", "issues #3", "the issue's runs") and test, benchmark
// and fuzz function names or test files, which mean nothing to a user and
// go stale. "Checked by the test suite" says what a test name would.
var internalRefs = regexp.MustCompile(`(?i:\bissues?\s*#?\d+|\bissue's\b)|\b(?:Test|Benchmark|Fuzz|Example)[A-Z]\w*|\b\w+_test\.go\b`)

// TestUserDocsNameNoIssuesOrTests: README.md and docs/ are for people who
// never saw the code or its history.
func TestUserDocsNameNoIssuesOrTests(t *testing.T) {
	t.Parallel()
	for _, f := range userDocs(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range internalRefs.FindAllString(line, -1) {
				t.Errorf("%s:%d: names %q (say \"checked by the test suite\" instead, or drop it)", f, i+1, m)
			}
		}
	}
}

// TestInternalRefsPattern: the lint above catches each kind it promises
// to, and leaves ordinary words alone.
func TestInternalRefsPattern(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		hit        bool
	}{
		{"issue number", "added in issue 10", true},
		{"capital issue", "Issue 11: shards", true},
		{"issue hash", "see issues #12", true},
		{"issue possessive", "the issue's S1 runs", true},
		{"test name", "checked by TestFaults", true},
		{"benchmark name", "BenchmarkPublish shows", true},
		{"fuzz name", "FuzzLoad found it", true},
		{"test file", "see faults_test.go", true},
		{"tested", "tested in a real browser", false},
		{"testsuite", "one testsuite per run", false},
		{"tissue", "tissue 3", false},
		{"test suite", "checked by the test suite", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := internalRefs.MatchString(tt.text); got != tt.hit {
				t.Errorf("%q: matched %v, want %v", tt.text, got, tt.hit)
			}
		})
	}
}
