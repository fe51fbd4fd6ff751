package main

import (
	"strings"
	"testing"
)

// TestVerdictColour checks that the summary's verdicts are coloured on a
// terminal only, and never when NO_COLOR or TERM=dumb says no.
func TestVerdictColour(t *testing.T) {
	t.Parallel()
	const plan = "testdata/cli/pass.yaml"
	tests := []struct {
		name   string
		opts   cmdOpts
		args   []string
		colour bool
	}{
		{"a terminal: coloured", cmdOpts{terminal: true}, nil, true},
		{"not a terminal: plain", cmdOpts{}, nil, false},
		{"NO_COLOR set: plain", cmdOpts{terminal: true, vars: map[string]string{"NO_COLOR": "1"}}, nil, false},
		{"NO_COLOR empty: coloured (no-color.org)", cmdOpts{terminal: true, vars: map[string]string{"NO_COLOR": ""}}, nil, true},
		{"TERM=dumb: plain", cmdOpts{terminal: true, vars: map[string]string{"TERM": "dumb"}}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmdWith(t, tt.opts, append(append([]string{"run", "--quiet"}, tt.args...), plan)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			coloured := strings.Contains(r.stdout, sgrGreen+"PASS"+sgrReset)
			if coloured != tt.colour {
				t.Errorf("coloured PASS: %v, want %v\n%q", coloured, tt.colour, r.stdout)
			}
			if !tt.colour && strings.Contains(r.stdout, "\x1b[") {
				t.Errorf("escape codes in plain output:\n%q", r.stdout)
			}
			if plain := strings.NewReplacer(sgrGreen, "", sgrReset, "").Replace(r.stdout); !strings.Contains(plain, "\nPASS: 2 of 2 thresholds held") {
				t.Errorf("the summary changed beyond its colour:\n%s", plain)
			}
		})
	}
}

// TestColourVerdicts checks which words are coloured: whole verdict
// words only.
func TestColourVerdicts(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"summary line", "FAIL: 1 of 2", sgrRed + "FAIL" + sgrReset + ": 1 of 2"},
		{"table cell", "| PASS   |", "| " + sgrGreen + "PASS" + sgrReset + "   |"},
		{"incomplete", "INCOMPLETE: x", sgrYellow + "INCOMPLETE" + sgrReset + ": x"},
		{"inconclusive", "INCONCLUSIVE: x", sgrYellow + "INCONCLUSIVE" + sgrReset + ": x"},
		{"not judged", "| NOT JUDGED |", "| " + sgrYellow + "NOT JUDGED" + sgrReset + " |"},
		{"inside a word: left alone", "PASSWORD FAILED", "PASSWORD FAILED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(colourVerdicts([]byte(tc.in))); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
