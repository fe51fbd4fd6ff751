package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name      string
		got, want string
		diff      string
	}{
		{name: "equal", got: "a\nb\n", want: "a\nb\n", diff: ""},
		{name: "one line differs", got: "a\nb\nX\nd\n", want: "a\nb\nc\nd\n", diff: "" +
			"first difference at line 3 (got 4 lines, want 4)\n" +
			"     1  a\n" +
			"     2  b\n" +
			"-    3  c\n" +
			"-    4  d\n" +
			"+    3  X\n" +
			"+    4  d\n"},
		{name: "context is limited", got: "1\n2\n3\n4\n5\nX\n", want: "1\n2\n3\n4\n5\n6\n", diff: "" +
			"first difference at line 6 (got 6 lines, want 6)\n" +
			"     3  3\n" +
			"     4  4\n" +
			"     5  5\n" +
			"-    6  6\n" +
			"+    6  X\n"},
		{name: "got is longer", got: "a\nb\n", want: "a\n", diff: "" +
			"first difference at line 2 (got 2 lines, want 1)\n" +
			"     1  a\n" +
			"+    2  b\n"},
		{name: "missing final newline", got: "a\nb", want: "a\nb\n", diff: "" +
			"first difference at line 2 (got 2 lines, want 2)\n" +
			"     1  a\n" +
			"-    2  b\n" +
			"+    2  b  (no newline at the end)\n"},
		{name: "invisible differences are quoted", got: "a\tb \n", want: "a b\n", diff: "" +
			"first difference at line 1 (got 1 lines, want 1)\n" +
			"-    1  a b\n" +
			"+    1  \"a\\tb \"\n"},
		{name: "empty got", got: "", want: "a\n", diff: "" +
			"first difference at line 1 (got 0 lines, want 1)\n" +
			"-    1  a\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Diff([]byte(tc.got), []byte(tc.want)); got != tc.diff {
				t.Errorf("Diff:\n%s\nwant:\n%s", got, tc.diff)
			}
		})
	}
}

// recorder is a testing.TB that keeps what Check reports instead of
// failing the test that runs it.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return "TestThing/case" }
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Logf(string, ...any) {}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "x.txt")
	write := func(s string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		file   string // "" for no file
		got    string
		update bool
		errs   []string // parts of the expected errors, one per error
		after  string   // the file afterwards
	}{
		{name: "equal", file: "a\n", got: "a\n", after: "a\n"},
		{name: "differs", file: "a\n", got: "b\n", after: "a\n",
			errs: []string{"output differs from " + path + " (go test -run '^TestThing$' -update, in this package's directory, rewrites it"}},
		{name: "missing", got: "a\n",
			errs: []string{"no such file or directory (go test -run '^TestThing$' -update, in this package's directory, creates it)"}},
		{name: "update writes", file: "a\n", got: "b\n", update: true, after: "b\n"},
		{name: "update creates", got: "b\n", update: true, after: "b\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(filepath.Join(dir, "sub"))
			if tc.file != "" {
				write(tc.file)
			}
			defer func(u bool) { *update = u }(*update)
			*update = tc.update
			r := &recorder{TB: t}
			Check(r, path, []byte(tc.got))
			if len(r.errors) != len(tc.errs) {
				t.Fatalf("errors %q, want %d", r.errors, len(tc.errs))
			}
			for i, e := range tc.errs {
				if !strings.Contains(r.errors[i], e) {
					t.Errorf("error %q, want it to hold %q", r.errors[i], e)
				}
			}
			if tc.after != "" {
				b, err := os.ReadFile(path)
				if err != nil || string(b) != tc.after {
					t.Errorf("file holds %q, %v; want %q", b, err, tc.after)
				}
			}
		})
	}
}
