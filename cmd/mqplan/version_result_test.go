package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResultsRecordVersion: every result a run writes names the mqplan
// that made it (the table, JSON, JUnit, Markdown and HTML), as do its
// partial and the result merged from it, and a saved result re-rendered
// keeps the version it was written with.
func TestResultsRecordVersion(t *testing.T) {
	t.Parallel()
	version := resultVersion()
	if version == "" || strings.HasPrefix(version, "mqplan") {
		t.Fatalf("resultVersion() = %q, want the version line less \"mqplan \"", version)
	}
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	r := runCmd(t, "run", "--quiet", "--partial", file("part.json"),
		"--out", "json="+file("r.json"), "--out", "table="+file("r.txt"), "--out", "junit="+file("r.xml"),
		"--out", "md="+file("r.md"), "--out", "html="+file("r.html"), "testdata/cli/pass.yaml")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	m := runCmd(t, "merge", "--insecure-parts", "--out", "json="+file("merged.json"), file("part.json"))
	if m.code != 0 {
		t.Fatalf("merge: exit %d\n%s%s", m.code, m.stdout, m.stderr)
	}
	// Re-rendered by a later mqplan, a result keeps its own version:
	// the file's is changed, and the table shows that one.
	saved, err := os.ReadFile(file("r.json"))
	if err != nil {
		t.Fatal(err)
	}
	older := strings.Replace(string(saved), `"mqplan_version": "`+version+`"`, `"mqplan_version": "v0.0.1 (go1.26.0)"`, 1)
	if err := os.WriteFile(file("older.json"), []byte(older), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := runCmd(t, "report", file("older.json"))

	tests := []struct {
		name, got, want string
	}{
		{"the table on stdout", r.stdout, "made by mqplan " + version + "\n"},
		{"--out table", read(t, file("r.txt")), "made by mqplan " + version + "\n"},
		{"--out json", jsonKey(t, file("r.json")), version},
		{"--out junit", read(t, file("r.xml")), `<property name="mqplan_version" value="` + version + `">`},
		{"--out md", read(t, file("r.md")), "- made by: `mqplan " + version + "`"},
		{"--out html", read(t, file("r.html")), "made by mqplan " + version},
		{"--partial", jsonKey(t, file("part.json")), version},
		{"merge --out json", jsonKey(t, file("merged.json")), version},
		{"report of an older result", rep.stdout, "made by mqplan v0.0.1 (go1.26.0)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(tt.got, tt.want) {
				t.Errorf("lacks %q:\n%.600s", tt.want, tt.got)
			}
		})
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jsonKey is the top-level "mqplan_version" of the JSON file at path.
func jsonKey(t *testing.T, path string) string {
	t.Helper()
	var doc struct {
		V string `json:"mqplan_version"`
	}
	if err := json.Unmarshal([]byte(read(t, path)), &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc.V
}
