package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// assertTerminalClean fails when out holds a control character other
// than newline and tab, once mqplan's own verdict colours are taken out.
func assertTerminalClean(t *testing.T, what, out string) {
	t.Helper()
	for _, sgr := range []string{sgrGreen, sgrRed, sgrYellow, sgrReset} {
		out = strings.ReplaceAll(out, sgr, "")
	}
	for i, r := range out {
		if r != '\n' && r != '\t' && (r < 0x20 || r >= 0x7f && r <= 0x9f) {
			t.Errorf("%s writes the control character %U at byte %d: %q", what, r, i, out[max(0, i-40):min(len(out), i+40)])
			return
		}
	}
}

// TestHostileTextEscaped: escape sequences in a baseline's file name, in
// a saved result's warnings and error samples (a broker's reasons) and in
// names of a hand-edited result never reach the terminal as such: the
// table and the error lines show them escaped, and names mqplan never
// writes with one are refused (exit 2). The verdict is still coloured on
// a terminal.
func TestHostileTextEscaped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	red := "\x1b[31mRED\x1b[0m"
	const redShown = `\x1b[31mRED\x1b[0m`

	if r := runCmd(t, "run", "--quiet", "--out", "json="+path("base.json"), "testdata/cli/pass.yaml"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	saved, err := os.ReadFile(path("base.json"))
	if err != nil {
		t.Fatal(err)
	}
	hostileBase := path(red + ".json")
	if err := os.WriteFile(hostileBase, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	gated := runCmdWith(t, cmdOpts{terminal: true}, "run", "--quiet", "--baseline", hostileBase, "--out", "json="+path("gated.json"), "testdata/cli/pass.yaml")
	if gated.code != 0 {
		t.Fatalf("run --baseline: exit %d\n%s", gated.code, gated.stderr)
	}
	// The saved run with a broker's hostile strings in its warnings and
	// error samples, as a broker could send them.
	var doc map[string]any
	gatedJSON, err := os.ReadFile(path("gated.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(gatedJSON, &doc); err != nil {
		t.Fatal(err)
	}
	doc["warnings"] = append(doc["warnings"].([]any), "the broker said \x1b]0;pwned\x07 \u009b2J")
	doc["error_samples"] = append(doc["error_samples"].([]any), "refused: "+red)
	// Further strings a broker's run may fill with anything: its URL, a
	// topic, a threshold's reason and a metric's name.
	doc["broker_url"] = "mqtt://" + red
	ths := doc["thresholds"].([]any)
	ths[1].(map[string]any)["reason"] = "reason " + red
	ths[0].(map[string]any)["values"].([]any)[0].(map[string]any)["metric"] = "m" + red
	plan := doc["plan"].(map[string]any)
	plan["groups"].([]any)[1].(map[string]any)["publish"].(map[string]any)["topic"] = "cli/" + red
	edited, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path("edited.json"), edited, 0o600); err != nil {
		t.Fatal(err)
	}
	plan["name"] = "cli-" + red
	renamed, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path("renamed.json"), renamed, 0o600); err != nil {
		t.Fatal(err)
	}
	// A timeline's group with escapes, or one the plan lacks: edited.
	plan["name"] = "cli-pass"
	second := doc["timeline"].([]any)[0].(map[string]any)["groups"].([]any)[0].(map[string]any)
	for file, name := range map[string]string{"group.json": red, "nosuch.json": "nosuch"} {
		second["group"] = name
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path(file), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string // substrings of standard output
		stderr []string // substrings of standard error
	}{
		{"run --baseline with a hostile file name", nil, 0, []string{"Compared with the baseline " + path(redShown+".json"), "PASS"}, nil},
		{"report of a result with hostile warnings", []string{"report", path("edited.json")}, 0,
			[]string{`WARNING: the broker said \x1b]0;pwned\x07 \u009b2J`, `refused: ` + redShown, redShown + ".json"}, nil},
		{"compare with a hostile file name", []string{"compare", hostileBase, path("base.json")}, 0, []string{"A: " + path(redShown+".json") + " |"}, nil},
		{"report --out html=- of a result with hostile text", []string{"report", "--out", "html=-", path("edited.json")}, 0,
			[]string{`the broker said \x1b]0;pwned\x07 \u009b2J`, `refused: ` + redShown, `mqtt://` + redShown, "cli/" + redShown, "m" + redShown}, nil},
		{"report --out csv=- of a result with hostile text", []string{"report", "--out", "csv=-", path("edited.json")}, 0, []string{"at_s,"}, nil},
		{"report --out csv=- of a timeline group with escapes", []string{"report", "--out", "csv=-", path("group.json")}, 2, nil,
			[]string{`timeline[0].groups[0].group: "\x1b[31mRED\x1b[0m" holds a control character`}},
		{"report --out csv=- of a timeline group the plan lacks", []string{"report", "--out", "csv=-", path("nosuch.json")}, 2, nil,
			[]string{`timeline[0].groups[0].group: "nosuch" is not a group of the plan`}},
		{"report of a result with a hostile plan name", []string{"report", path("renamed.json")}, 2, nil,
			[]string{`plan.name: "cli-\x1b[31mRED\x1b[0m" holds a control character`}},
		{"run --baseline naming a missing hostile file", []string{"run", "--baseline", path(red + "-none.json"), "testdata/cli/pass.yaml"}, 2, nil,
			[]string{path(redShown + "-none.json")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gated
			if tt.args != nil {
				r = runCmdWith(t, cmdOpts{terminal: true}, tt.args...)
			}
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.code, r.stderr)
			}
			assertTerminalClean(t, "standard output", r.stdout)
			assertTerminalClean(t, "standard error", r.stderr)
			for _, want := range tt.stdout {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("standard output lacks %q:\n%s", want, r.stdout)
				}
			}
			for _, want := range tt.stderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("standard error lacks %q:\n%s", want, r.stderr)
				}
			}
			// Not so when the output asked for is not the table.
			if tt.code == 0 && !slices.Contains(tt.args, "--out") && !strings.Contains(r.stdout, sgrGreen+"PASS"+sgrReset) {
				t.Errorf("the verdict is not coloured on a terminal:\n%s", r.stdout)
			}
		})
	}
}
