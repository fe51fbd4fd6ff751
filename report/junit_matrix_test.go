package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// matrixCase is one test case of a merged report, by what CI servers
// tell test cases apart with.
type matrixCase struct{ suite, class, name string }

// matrixReports are the JUnit reports of one plan run against two brokers
// of a CI matrix, with labels (or none).
func matrixReports(t *testing.T, labels ...string) [][]byte {
	t.Helper()
	var docs [][]byte
	for _, l := range labels {
		p := testPlan("p99 < 10ms", "loss_rate == 0")
		r := Evaluate(p, withBuiltins(t, p), fullStats(t))
		r.Label = l
		var b bytes.Buffer
		if err := WriteJUnit(&b, r); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b.Bytes())
	}
	return docs
}

// mergeLikeJRM merges JUnit documents as junit-report-merger does: suites
// of the same name become one suite holding the test cases of both. It
// returns every test case of the merged document.
func mergeLikeJRM(t *testing.T, docs [][]byte) []matrixCase {
	t.Helper()
	type suite struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name  string `xml:"name,attr"`
			Class string `xml:"classname,attr"`
		} `xml:"testcase"`
	}
	var order []string
	cases := map[string][]matrixCase{}
	for _, d := range docs {
		var doc struct {
			Suites []suite `xml:"testsuite"`
		}
		if err := xml.Unmarshal(d, &doc); err != nil {
			t.Fatalf("the report does not parse: %v", err)
		}
		for _, s := range doc.Suites {
			if _, ok := cases[s.Name]; !ok {
				order = append(order, s.Name)
			}
			for _, c := range s.Cases {
				cases[s.Name] = append(cases[s.Name], matrixCase{s.Name, c.Class, c.Name})
			}
		}
	}
	var all []matrixCase
	for _, n := range order {
		all = append(all, cases[n]...)
	}
	return all
}

// folded counts the test cases a CI server would fold into another: the
// same suite, class and name.
func folded(cases []matrixCase) int {
	seen := map[matrixCase]bool{}
	n := 0
	for _, c := range cases {
		if seen[c] {
			n++
		}
		seen[c] = true
	}
	return n
}

// TestJUnitMatrixMerge: the reports of a broker matrix, each run with its
// --label, keep their test cases apart when merged into one file the way
// junit-report-merger merges (suites by name), so that a CI server shows
// both brokers' thresholds; without labels they fold, which is what the
// labels are for.
func TestJUnitMatrixMerge(t *testing.T) {
	tests := []struct {
		name   string
		labels []string
		folded bool
	}{
		{"two labels", []string{"mosquitto", "emqx"}, false},
		{"no labels", []string{"", ""}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs := matrixReports(t, tt.labels...)
			cases := mergeLikeJRM(t, docs)
			if n := folded(cases); (n > 0) != tt.folded {
				t.Errorf("%d of %d test cases folded into another after merging; want folding %v", n, len(cases), tt.folded)
			}
		})
	}
}

// TestJUnitMatrixMergeJRM runs junit-report-merger itself (from the npm
// registry, through npx) on the reports of a labelled broker matrix, and
// checks that its merged file keeps every test case apart. It skips when
// npx is not installed or the package cannot be fetched.
func TestJUnitMatrixMergeJRM(t *testing.T) {
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx is not installed; TestJUnitMatrixMerge makes the same check in Go")
	}
	dir := t.TempDir()
	docs := matrixReports(t, "mosquitto", "emqx")
	var paths []string
	for i, d := range docs {
		p := filepath.Join(dir, []string{"mosquitto.xml", "emqx.xml"}[i])
		if err := os.WriteFile(p, d, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out := filepath.Join(dir, "merged.xml")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npx, append([]string{"-y", "junit-report-merger", out}, paths...)...)
	cmd.Dir = dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("junit-report-merger could not run (npx -y junit-report-merger: %v); TestJUnitMatrixMerge makes the same check in Go:\n%s", err, msg)
	}
	merged, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	cases := mergeLikeJRM(t, [][]byte{merged})
	want := len(mergeLikeJRM(t, docs))
	if len(cases) != want {
		t.Fatalf("merged file has %d test cases, want the %d of both reports:\n%s", len(cases), want, merged)
	}
	if n := folded(cases); n > 0 {
		t.Errorf("%d test cases share a suite, class and name with another after junit-report-merger:\n%s", n, merged)
	}
}
