package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandExamples checks the examples every command's --help ends
// with: each command has some, every flag they use is one the command
// defines, every plan file they name exists, and the examples of the
// commands that do not connect (validate, explain) succeed as written.
func TestCommandExamples(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"run", "validate", "explain", "broker", "schema", "report", "compare", "merge", "find-max"} {
		t.Run(name, func(t *testing.T) {
			help := runCmd(t, name, "--help")
			if help.code != 0 || !strings.Contains(help.stderr, "\nExamples:\n") {
				t.Fatalf("--help: exit %d, no examples:\n%s", help.code, help.stderr)
			}
			for _, ex := range commandExamples[name] {
				line, _, _ := strings.Cut(ex, "#")
				fields := strings.Fields(line)
				if len(fields) < 2 || fields[0] != "mqplan" || fields[1] != name {
					t.Fatalf("%q is not an example of mqplan %s", ex, name)
				}
				for _, f := range fields[2:] {
					switch {
					case strings.HasPrefix(f, "--"):
						flag, _, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
						if !strings.Contains(help.stderr, "  -"+flag+" ") && !strings.Contains(help.stderr, "  -"+flag+"\n") {
							t.Errorf("%q: mqplan %s has no flag --%s", ex, name, flag)
						}
					case strings.HasPrefix(f, "plans/") && !strings.Contains(f, "*"):
						if _, err := os.Stat(f); err != nil {
							t.Errorf("%q: %v", ex, err)
						}
					}
				}
				if name == "validate" || name == "explain" {
					args := fields[1:]
					if strings.Contains(line, "*") {
						// The shell expands globs; here they are expanded by hand.
						args = expandGlobs(t, args)
					}
					if r := runCmd(t, args...); r.code != 0 {
						t.Errorf("%q: exit %d\n%s", ex, r.code, r.stderr)
					}
				}
			}
		})
	}
}

// expandGlobs expands the shell patterns among args, as a shell would.
func expandGlobs(t *testing.T, args []string) []string {
	t.Helper()
	var out []string
	for _, a := range args {
		if !strings.Contains(a, "*") {
			out = append(out, a)
			continue
		}
		m, err := filepath.Glob(a)
		if err != nil || len(m) == 0 {
			t.Fatalf("%s matches nothing (%v)", a, err)
		}
		out = append(out, m...)
	}
	return out
}
