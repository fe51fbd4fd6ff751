// Package golden compares test outputs with the files that pin them
// (testdata/golden/...), and rewrites those files when asked to:
//
//	go test ./plans ./report ./cmd/mqplan/... -update
//
// It owns the -update flag and the comparison, so that every package's
// golden files behave alike and a mismatch is shown the same way: the
// first line that differs, with a few lines around it.
//
// Import it from tests only: importing it registers -update on the
// program's flag set, which only a test binary should have. A test binary
// must not register its own -update beside it (the flag package panics on
// the second). Every package named on a `go test ... -update` command line
// must import golden, or its test binary refuses the unknown flag.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update rewrites golden files instead of comparing with them.
var update = flag.Bool("update", false, "rewrite golden files instead of comparing with them")

// Updating reports whether the test binary runs with -update, for tests
// that pin outputs in their own way.
func Updating() bool { return *update }

// contextLines is how many lines around the first difference a mismatch
// shows: enough to find the place in the file, few enough to read.
const contextLines = 3

// Check compares got with the golden file at path (relative to the test's
// package directory). With -update it writes got there instead, making
// the directory if needed. A mismatch or a missing file fails the test
// (without stopping it) and says how to rewrite the file.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, got) {
			return
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("updated %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v (%s creates it)", err, rerun(t))
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (%s rewrites it if the change is intended)\n%s", path, rerun(t), Diff(got, want))
	}
}

// rerun is the command that rewrites the golden files of t's test.
func rerun(t testing.TB) string {
	top, _, _ := strings.Cut(t.Name(), "/")
	return fmt.Sprintf("go test -run '^%s$' -update, in this package's directory,", top)
}

// Diff shows where got and want first differ: the line numbers, a few
// lines of context that both share, then the differing line of each
// ("-" wanted, "+" got, as in a unified diff) and what follows it.
// Lines are shown quoted when they hold a character a terminal would
// hide (a tab, a carriage return, a control character, trailing
// blanks), so that an invisible difference is seen. Diff is "" when got
// and want are equal.
func Diff(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	g, w := splitLines(got), splitLines(want)
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "first difference at line %d (got %d lines, want %d)\n", i+1, len(g), len(w))
	for j := max(0, i-contextLines); j < i; j++ {
		fmt.Fprintf(&b, "  %4d  %s\n", j+1, show(w[j]))
	}
	for j := i; j < min(len(w), i+contextLines); j++ {
		fmt.Fprintf(&b, "- %4d  %s\n", j+1, show(w[j]))
	}
	for j := i; j < min(len(g), i+contextLines); j++ {
		fmt.Fprintf(&b, "+ %4d  %s\n", j+1, show(g[j]))
	}
	return b.String()
}

// splitLines splits text into lines, each with its newline, so that a
// missing final newline is a difference like any other.
func splitLines(text []byte) []string {
	var lines []string
	for len(text) > 0 {
		i := bytes.IndexByte(text, '\n')
		if i < 0 {
			lines = append(lines, string(text))
			break
		}
		lines = append(lines, string(text[:i+1]))
		text = text[i+1:]
	}
	return lines
}

// show prints a line without its newline, quoted if a terminal would hide
// part of it, and marked when it has no newline (the end of a file
// without one).
func show(line string) string {
	s, nl := strings.CutSuffix(line, "\n")
	visible := strings.TrimRight(s, " ") == s && !strings.ContainsFunc(s, func(r rune) bool {
		return r < ' ' || r == 0x7f || r == '\uFFFD'
	})
	if !visible {
		s = fmt.Sprintf("%q", s)
	}
	if !nl {
		s += "  (no newline at the end)"
	}
	return s
}
