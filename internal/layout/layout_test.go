// Package layout holds the tests of the import rules ARCHITECTURE.md
// states: its Imports block, every package's direct imports of the
// module, compared with `go list` both ways; and the dependencies at any
// depth it forbids, checked against `go list -deps`, so that a change that
// makes the report pull in the broker, or the plan language pull in the
// engine, fails CI instead of drifting silently.
package layout

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// heavy are modules only the process, the engine and the live endpoint
// may bring in: the embedded broker, the MQTT and WebSocket libraries,
// x/sys and the Prometheus client. A library user who only reads results
// or plans should not pay for them.
var heavy = []string{
	"github.com/mochi-mqtt/",
	"github.com/eclipse/paho.golang/",
	"github.com/gorilla/websocket",
	"golang.org/x/sys/",
	"github.com/prometheus/",
}

// TestImportRules: every package's dependencies (tests aside) respect the
// layout: imports point from the process down to the plan language, and
// the pure packages bring in no heavy module.
func TestImportRules(t *testing.T) {
	const mod = "github.com/mqplan/mqplan/"
	tests := []struct {
		pkg       string
		forbidden []string // packages (and those below them) it may not depend on
	}{
		{"plans", append([]string{mod + "runner", mod + "report", mod + "stats", mod + "broker", mod + "live", mod + "cmd"}, heavy...)},
		{"threshold", append([]string{mod + "plans", mod + "runner", mod + "report", mod + "stats"}, heavy...)},
		{"metric", append([]string{mod + "plans", mod + "threshold", mod + "stats"}, heavy...)},
		{"phase", append([]string{mod + "plans", mod + "stats"}, heavy...)},
		{"stats", append([]string{mod + "plans", mod + "runner", mod + "report", mod + "broker"}, heavy...)},
		{"brokerstat", append([]string{mod + "plans", mod + "runner", mod + "stats", mod + "report"}, heavy...)},
		{"procstat", append([]string{mod + "plans", mod + "runner", mod + "stats", mod + "report"}, heavy...)},
		{"report", append([]string{mod + "runner", mod + "broker", mod + "live", mod + "cmd", mod + "brokerstat/exposition"}, heavy...)},
		{"runner", []string{mod + "report", mod + "broker", mod + "live", mod + "cmd", "github.com/mochi-mqtt/"}},
		{"broker", []string{mod + "plans", mod + "runner", mod + "report", mod + "live", mod + "cmd"}},
		{"findmax", append([]string{mod + "plans", mod + "runner", mod + "report", mod + "stats", mod + "threshold", mod + "metric", mod + "broker", mod + "live", mod + "cmd"}, heavy...)},
		{"partial", append([]string{mod + "runner", mod + "report", mod + "broker", mod + "live", mod + "cmd"}, heavy...)},
		// coord may read the host's clocks through x/sys (adjtimex, and
		// CLOCK_MONOTONIC to align shards on one host exactly): only the
		// process uses it, and the clock figures are its whole point.
		{"coord", append([]string{mod + "plans", mod + "runner", mod + "report", mod + "stats", mod + "partial", mod + "broker", mod + "live", mod + "cmd"}, without(heavy, "golang.org/x/sys/")...)},
		{"live", []string{mod + "plans", mod + "runner", mod + "report", mod + "broker", mod + "cmd"}},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "../../"+tt.pkg).Output()
			if err != nil {
				t.Fatalf("go list %s: %v", tt.pkg, err)
			}
			for _, dep := range strings.Fields(string(out)) {
				if dep == mod+tt.pkg {
					continue
				}
				for _, f := range tt.forbidden {
					if within(dep, f) {
						t.Errorf("%s depends on %s", tt.pkg, dep)
					}
				}
			}
		})
	}
}

// within reports whether package dep is f or below it; a prefix that
// ends in "/" (a module path) matches every package under it.
func within(dep, f string) bool {
	if strings.HasSuffix(f, "/") {
		return strings.HasPrefix(dep, f)
	}
	return dep == f || strings.HasPrefix(dep, f+"/")
}

// without returns list without s.
func without(list []string, s string) []string {
	var out []string
	for _, v := range list {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}

// architectureDoc is the maintainers' description of the layout, whose
// Imports block TestArchitectureImports holds to the code.
const architectureDoc = "../../ARCHITECTURE.md"

// TestArchitectureImports: ARCHITECTURE.md's Imports block lists every
// package of the module with exactly the packages of the module it
// imports (tests aside), so that the document cannot drift from the code:
// a new import, a dropped one, or a new or removed package fails here
// until the block says so.
func TestArchitectureImports(t *testing.T) {
	const mod = "github.com/mqplan/mqplan/"
	doc, err := architectureImports()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	code := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, "|")
		var deps []string
		for _, i := range strings.Fields(imports) {
			if strings.HasPrefix(i, mod) {
				deps = append(deps, strings.TrimPrefix(i, mod))
			}
		}
		slices.Sort(deps)
		code[strings.TrimPrefix(pkg, mod)] = deps
	}
	for pkg, deps := range code {
		listed, ok := doc[pkg]
		switch {
		case !ok:
			t.Errorf("%s: package %s is missing from the Imports block (it imports %s)", architectureDoc, pkg, orNothing(deps))
		case !slices.Equal(listed, deps):
			t.Errorf("%s: the Imports block says %s → %s; the code imports %s", architectureDoc, pkg, orNothing(listed), orNothing(deps))
		}
	}
	for pkg := range doc {
		if _, ok := code[pkg]; !ok {
			t.Errorf("%s: the Imports block lists %s, which is not a package of the module", architectureDoc, pkg)
		}
	}
}

// architectureImports reads ARCHITECTURE.md's Imports block: the first
// fenced block after "## Imports", a line "PACKAGE → A, B" (or
// "→ nothing") per package, the imports sorted.
func architectureImports() (map[string][]string, error) {
	data, err := os.ReadFile(architectureDoc)
	if err != nil {
		return nil, err
	}
	_, rest, ok := strings.Cut(string(data), "\n## Imports\n")
	if !ok {
		return nil, errorf("no \"## Imports\" section")
	}
	_, rest, ok = strings.Cut(rest, "\n```\n")
	if !ok {
		return nil, errorf("no code block in the Imports section")
	}
	block, _, ok := strings.Cut(rest, "\n```")
	if !ok {
		return nil, errorf("the Imports block does not end")
	}
	doc := map[string][]string{}
	for _, line := range strings.Split(block, "\n") {
		pkg, deps, ok := strings.Cut(line, "→")
		if !ok {
			return nil, errorf("line %q has no →", line)
		}
		pkg = strings.TrimSpace(pkg)
		var list []string
		if d := strings.TrimSpace(deps); d != "nothing" {
			for _, dep := range strings.Split(d, ",") {
				list = append(list, strings.TrimSpace(dep))
			}
		}
		if !slices.IsSorted(list) {
			return nil, errorf("%s: list its imports in order", pkg)
		}
		if _, dup := doc[pkg]; dup {
			return nil, errorf("%s is listed twice", pkg)
		}
		doc[pkg] = list
	}
	return doc, nil
}

// orNothing writes a list of packages as the Imports block does.
func orNothing(list []string) string {
	if len(list) == 0 {
		return "nothing"
	}
	return strings.Join(list, ", ")
}

// errorf is an error about ARCHITECTURE.md's form.
func errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", architectureDoc, fmt.Sprintf(format, args...))
}
