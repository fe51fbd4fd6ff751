package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// resultReferencePath is the user's reference of the JSON result.
const resultReferencePath = "docs/results.md"

// TestResultReference: every key of a real JSON result is listed in
// docs/results.md, and every key listed there either appears in that
// result or is said to appear only sometimes. The result comes from runs
// of testdata/docs/results.yaml on the embedded broker (stages, a payload
// template, request/response, the broker's own counters) and a second run
// judged against the first as its baseline, not from the report package's
// types, so the check stands on what mqplan writes.
func TestResultReference(t *testing.T) {
	t.Parallel()
	ref := readResultReference(t)
	dir := t.TempDir()
	base, withBaseline := filepath.Join(dir, "base.json"), filepath.Join(dir, "now.json")
	plan := "testdata/docs/results.yaml"
	// The keys are under test, not the verdict: a run that completed
	// writes the whole result whether it passed, failed (a busy machine
	// may fall behind even this small plan) or was inconclusive.
	completed := func(code int) bool { return code == 0 || code == 1 || code == 4 }
	if r := runCmd(t, "run", "--quiet", "--json", base, "--set", "thresholds[2]=p99 < 10s", plan); !completed(r.code) {
		t.Fatalf("the first run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCmd(t, "run", "--quiet", "--json", withBaseline, "--baseline", base, "--label", "docs", plan); !completed(r.code) {
		t.Fatalf("the run against its baseline: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	seen, metrics := map[string]bool{}, map[string]bool{}
	for _, f := range []string{base, withBaseline} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		resultKeys(doc, nil, seen, metrics)
	}
	for _, k := range sortedKeys(seen) {
		if _, ok := ref.paths[k]; !ok {
			t.Errorf("the JSON result has %s, which %s does not list", k, resultReferencePath)
		}
	}
	for _, m := range sortedKeys(metrics) {
		if !ref.metrics[m] {
			t.Errorf("the JSON result has the metric %s, which %s's metric names do not list", m, resultReferencePath)
		}
	}
	for _, k := range sortedKeys(ref.paths) {
		if !seen[k] && !ref.paths[k] {
			t.Errorf("%s lists %s, which the result does not have, without saying it appears only sometimes", resultReferencePath, k)
		}
	}
	if len(seen) < 200 {
		t.Errorf("only %d keys in the results: the runs did not produce what the test expects", len(seen))
	}
}

// resultKeys adds to seen the path of every key under v ("[]" for an
// array's elements), with the names of maps keyed by name written as
// their placeholder: metric sets' keys as METRIC (each name added to
// metrics), and groups, phases and stages as GROUP, PHASE and STAGE.
func resultKeys(v any, path []string, seen, metrics map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			seg := k
			switch {
			case len(path) == 2 && path[0] == "metrics" && path[1] == "top",
				len(path) == 3 && path[0] == "metrics":
				metrics[k] = true
				seg = "METRIC"
			case len(path) == 2 && path[0] == "metrics" && path[1] == "groups":
				seg = "GROUP"
			case len(path) == 2 && path[0] == "metrics" && path[1] == "phases":
				seg = "PHASE"
			case len(path) == 2 && path[0] == "metrics" && path[1] == "stages":
				seg = "STAGE"
			case len(path) == 3 && path[0] == "plan" && path[1] == "stages[]" && path[2] == "clients":
				seg = "GROUP"
			}
			p := append(slices.Clone(path), seg)
			seen[strings.Join(p, ".")] = true
			resultKeys(x, p, seen, metrics)
		}
	case []any:
		if len(path) == 0 {
			return
		}
		p := slices.Clone(path)
		p[len(p)-1] += "[]"
		for _, x := range v {
			seen[strings.Join(p, ".")] = true
			resultKeys(x, p, seen, metrics)
		}
	}
}

// resultReference is what docs/results.md lists: each path, and whether
// the page says it appears only sometimes (its row or its section says
// "only"); and the metric names of its Metric sets section.
type resultReference struct {
	paths   map[string]bool
	metrics map[string]bool
}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	braces     = regexp.MustCompile(`\{([^{}]*)\}`)
)

// readResultReference parses docs/results.md: the first cell of every
// table row holds the paths it describes, in backticks, with {a,b} for
// alternatives; the bullets of "## Metric sets" hold the metric names.
func readResultReference(t *testing.T) resultReference {
	t.Helper()
	data, err := os.ReadFile(resultReferencePath)
	if err != nil {
		t.Fatal(err)
	}
	ref := resultReference{paths: map[string]bool{}, metrics: map[string]bool{}}
	section, intro := "", ""
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			section, intro = strings.TrimPrefix(line, "## "), ""
		case strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| key ") && !strings.HasPrefix(line, "|---"):
			cells := strings.SplitN(line, " | ", 2)
			sometimes := strings.Contains(line, "only") || strings.Contains(strings.ToLower(intro), "only")
			for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
				for _, p := range expandBraces(m[1]) {
					ref.paths[p] = ref.paths[p] || sometimes
				}
			}
		case section == "Metric sets" && strings.HasPrefix(strings.TrimSpace(line), "- ") || section == "Metric sets" && strings.HasPrefix(line, "  "):
			for _, m := range backticked.FindAllStringSubmatch(line, -1) {
				for _, name := range expandBraces(m[1]) {
					ref.metrics[name] = true
				}
			}
		case !strings.HasPrefix(line, "|"):
			intro += line
		}
	}
	if len(ref.paths) == 0 || len(ref.metrics) == 0 {
		t.Fatalf("%s: no paths or no metric names found", resultReferencePath)
	}
	return ref
}

// expandBraces expands every {a,b,...} in s, as a shell does.
func expandBraces(s string) []string {
	loc := braces.FindStringSubmatchIndex(s)
	if loc == nil {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[loc[2]:loc[3]], ",") {
		out = append(out, expandBraces(s[:loc[0]]+alt+s[loc[1]:])...)
	}
	return out
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
