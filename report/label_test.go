package report

import (
	"bytes"
	"html"
	"io"
	"strings"
	"testing"
)

// TestLabelInEveryFormat: a run's --label shows in every format that
// names the run (beside the plan's name), and reads back from JSON; the
// CSV, the per-second timeline alone, names neither the plan nor the
// label, and an unlabelled run shows no brackets.
func TestLabelInEveryFormat(t *testing.T) {
	const label = "emqx-5.8"
	p := testPlan("p99 < 10ms")
	r := Evaluate(p, withBuiltins(t, p), fullStats(t))
	r.Label = label
	tests := []struct {
		format string
		want   string // "" for a format without it
	}{
		{"json", `"label": "emqx-5.8"`},
		{"table", "mqplan " + p.Name + " [emqx-5.8] | broker "},
		{"junit", `<testsuite name="mqplan ` + p.Name + ` [emqx-5.8]"`},
		{"md", " mqplan " + p.Name + ` \[emqx-5.8\]: `}, // brackets escaped
		{"html", p.Name + " [emqx-5.8]"},
		{"csv", ""},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			f, ok := LookupFormat(tt.format)
			if !ok {
				t.Fatalf("no format %s", tt.format)
			}
			var b bytes.Buffer
			if err := f.Write(&b, r); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if tt.format == "html" {
				out = html.UnescapeString(out)
			}
			if tt.want == "" {
				if strings.Contains(out, label) {
					t.Errorf("%s carries the label, which this format leaves out", tt.format)
				}
				return
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("%s lacks %q", tt.format, tt.want)
			}
			var plain bytes.Buffer
			r.Label = ""
			err := f.Write(&plain, r)
			r.Label = label
			if err != nil {
				t.Fatal(err)
			}
			if s := plain.String(); strings.Contains(s, p.Name+" [") || strings.Contains(s, p.Name+` \[`) || strings.Contains(s, `"label": "`) {
				t.Errorf("%s without a label still shows one", tt.format)
			}
		})
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Label != label {
		t.Errorf("label read back from JSON %q, want %q", back.Label, label)
	}
}

// TestFindMaxLabel: find-max's --label shows after the plan's name in its
// table, HTML title and JSON, and nowhere without one.
func TestFindMaxLabel(t *testing.T) {
	f := findMaxCases()["findmax-confirmed"]
	tests := []struct {
		name  string
		write func(io.Writer, *FindMax) error
		want  string
	}{
		{"table", WriteFindMaxTable, "mqplan find-max 1to1-qos1 [emqx-5.8]: "},
		{"json", WriteFindMaxJSON, `"label": "emqx-5.8"`},
		{"html", WriteFindMaxHTML, "1to1-qos1 [emqx-5.8] · "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, label := range []string{"emqx-5.8", ""} {
				f.Label = label
				var b bytes.Buffer
				if err := tt.write(&b, f); err != nil {
					t.Fatal(err)
				}
				out := html.UnescapeString(b.String())
				if has := strings.Contains(out, tt.want); has != (label != "") {
					t.Errorf("label %q: output has %q: %v", label, tt.want, has)
				}
			}
		})
	}
}
