package report

import (
	"bytes"
	"encoding/json"
	"html"
	"io"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTerminalSafe(t *testing.T) {
	tests := []struct {
		name, in, keep, want string
	}{
		{"plain text unchanged", "p99 1.5ms, ümlaut ✓", "", "p99 1.5ms, ümlaut ✓"},
		{"CSI colour", "\x1b[31mRED\x1b[0m", "", `\x1b[31mRED\x1b[0m`},
		{"OSC retitle with BEL", "\x1b]0;pwned\x07x", "", `\x1b]0;pwned\x07x`},
		{"C1 CSI as a rune", "a\u009b2Jb", "", `a\u009b2Jb`},
		{"DEL", "a\x7fb", "", `a\x7fb`},
		{"a byte that is not UTF-8", "a\x9bb\xff", "", `a\x9bb\xff`},
		{"newline escaped unless kept", "a\nb", "", `a\x0ab`},
		{"newline kept", "a\nb\r", "\n", "a\nb\\x0d"},
		{"tab kept when asked", "a\tb\n", "\n\t", "a\tb\n"},
		{"NUL", "a\x00b", "\n", `a\x00b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TerminalSafe(tt.in, tt.keep); got != tt.want {
				t.Errorf("TerminalSafe(%q, %q) = %q, want %q", tt.in, tt.keep, got, tt.want)
			}
		})
	}
}

// assertNoControl fails when out holds a control character other than
// newline (or bytes that are not UTF-8).
func assertNoControl(t *testing.T, what string, out []byte) {
	t.Helper()
	assertNoControlBut(t, what, "\n", out)
}

// assertNoControlBut fails when out holds a control character other
// than those in keep (or bytes that are not UTF-8).
func assertNoControlBut(t *testing.T, what, keep string, out []byte) {
	t.Helper()
	if !utf8.Valid(out) {
		t.Errorf("%s is not UTF-8", what)
	}
	for i, r := range string(out) {
		if !strings.ContainsRune(keep, r) && (r < 0x20 || r >= 0x7f && r <= 0x9f) {
			t.Errorf("%s writes the control character %U at byte %d: %q", what, r, i, out[max(0, i-30):min(len(out), i+30)])
			return
		}
	}
}

// TestTableEscapesHostileText: text that comes from outside mqplan (a
// broker's reasons in warnings and error samples, the baseline's file
// name, the comparison's notes) shows escaped in the terminal table and
// the comparison table, never as the escape sequence it holds.
func TestTableEscapesHostileText(t *testing.T) {
	var r *Result
	for _, tc := range goldenCases(t) {
		if tc.name == "baseline" {
			r = tc.r
		}
	}
	hostile := *r
	hostile.Warnings = append([]string{"broker said \x1b]0;pwned\x07 and \x1b[2J"}, r.Warnings...)
	hostile.ErrorSamples = append([]string{"reason \u009b31m from the broker\x00"}, r.ErrorSamples...)
	cmp := *r.Comparison
	cmp.A.Label = "\x1b[31mRED\x1b[0m.json"
	cmp.Notes = append([]string{"A is \x1b[31mRED\x1b[0m.json\r"}, cmp.Notes...)
	hostile.Comparison = &cmp
	tests := []struct {
		name  string
		write func(*bytes.Buffer) error
		want  []string
	}{
		{"table", func(b *bytes.Buffer) error { return WriteTable(b, &hostile) },
			[]string{`broker said \x1b]0;pwned\x07 and \x1b[2J`, `reason \u009b31m from the broker\x00`, `baseline \x1b[31mRED\x1b[0m.json`, `\x1b[31mRED\x1b[0m.json\x0d`}},
		{"comparison table", func(b *bytes.Buffer) error { return WriteComparison(b, &cmp) },
			[]string{`A: \x1b[31mRED\x1b[0m.json |`, `NOTE: A is \x1b[31mRED\x1b[0m.json\x0d`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.write(&b); err != nil {
				t.Fatal(err)
			}
			assertNoControl(t, tt.name, b.Bytes())
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("%s lacks %q:\n%s", tt.name, w, b.String())
				}
			}
		})
	}
}

// TestReadJSONRefusesControlCharacters: a saved result whose names hold
// a control character mqplan never writes there (plans refuses them in a
// plan's name) was edited: refused, naming the JSON path.
func TestReadJSONRefusesControlCharacters(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, goldenCases(t)[0].r); err != nil {
		t.Fatal(err)
	}
	good := b.String()
	tests := []struct{ name, old, new, want string }{
		{"plan name", `"name": "1to1-qos1"`, `"name": "\u001b]0;pwned\u0007"`, `plan.name: "\x1b]0;pwned\a" holds a control character`},
		{"description", `"description": "`, `"description": "\u009b2J`, "plan.description: "},
		{"group name", `"name": "sub",`, `"name": "s\u001b[31mub",`, "plan.groups[0].name: "},
		{"metric name", `"received": 7993,`, `"received": 7993, "x\u001b[2J": 1,`, `metrics.top key: "x\x1b[2J" holds a control character`},
		{"timeline group name", `          "group": "sub",`, `          "group": "\u001b[31m\u0007\u009b",`,
			`timeline[0].groups[0].group: "\x1b[31m\a\u009b" holds a control character`},
		{"timeline group the plan lacks", `          "group": "sub",`, `          "group": "nosuch",`,
			`timeline[0].groups[0].group: "nosuch" is not a group of the plan: the file was edited`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(good, tt.old) {
				t.Fatalf("fixture lacks %q", tt.old)
			}
			r, err := ReadJSON(strings.NewReader(strings.Replace(good, tt.old, tt.new, 1)))
			if err == nil {
				t.Fatalf("read a result (%s), want an error with %q", r.Verdict(), tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q\nwant one line with %q", err, tt.want)
			}
			assertNoControl(t, "the error", []byte(err.Error()))
		})
	}
}

// TestFilesEscapeHostileText: text that may come from a broker at run
// time (warnings, error samples, a threshold's reason, the broker's URL,
// a topic, a metric's name) and a timeline group's name, all holding
// ESC, BEL, DEL, C1 and a byte that is not UTF-8, never reach the HTML
// page or the CSV as such: they show escaped as TerminalSafe shows them,
// and the page's chart data still parses.
func TestFilesEscapeHostileText(t *testing.T) {
	const (
		hostile = "\x1b[31mRED\x07\u009b2J\x7f\xff"
		shown   = `\x1b[31mRED\x07\u009b2J\x7f\xff`
		// In JSON the byte that is not UTF-8 became U+FFFD.
		read = `\x1b[31mRED\x07\u009b2J\x7f` + "\ufffd"
	)
	r, good, _ := baselineJSON(t)
	var doc map[string]any
	if err := json.Unmarshal([]byte(good), &doc); err != nil {
		t.Fatal(err)
	}
	doc["warnings"] = append(doc["warnings"].([]any), "w "+hostile)
	doc["broker_url"] = "mqtt://b" + hostile
	doc["error_samples"] = append(doc["error_samples"].([]any), "e "+hostile)
	th := doc["thresholds"].([]any)
	th[2].(map[string]any)["reason"] = "r " + hostile // a failed one: its reason shows
	th[0].(map[string]any)["values"].([]any)[0].(map[string]any)["metric"] = "m" + hostile
	pub := doc["plan"].(map[string]any)["groups"].([]any)[1].(map[string]any)["publish"].(map[string]any)
	pub["topic"] = "t/" + hostile
	edited, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := ReadJSON(bytes.NewReader(edited))
	if err != nil {
		t.Fatalf("a result with a broker's hostile text: %v", err)
	}
	// What ReadJSON refuses, a writer still never writes as such.
	direct := *r
	direct.Timeline = slices.Clone(r.Timeline)
	direct.Timeline[0].Groups = slices.Clone(direct.Timeline[0].Groups)
	direct.Timeline[0].Groups[0].Group = "g" + hostile
	for _, tt := range []struct {
		name  string
		r     *Result
		write func(io.Writer, *Result) error
		want  []string
	}{
		{"html", saved, WriteHTML, []string{"w " + read, "mqtt://b" + read, "e " + read, "r " + read, "m" + read, "t/" + read}},
		{"html with a hostile group", &direct, WriteHTML, nil},
		{"csv with a hostile group", &direct, WriteCSV, []string{"g" + shown}},
		{"csv", saved, WriteCSV, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.write(&b, tt.r); err != nil {
				t.Fatal(err)
			}
			assertNoControlBut(t, tt.name, "\n\t", b.Bytes())
			out := html.UnescapeString(b.String())
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("%s lacks %q", tt.name, w)
				}
			}
			if strings.HasPrefix(tt.name, "html") {
				_, data, ok := strings.Cut(b.String(), `<script type="application/json" id="mqplan-data">`)
				data, _, ok2 := strings.Cut(data, "</script>")
				if !ok || !ok2 || !json.Valid([]byte(data)) {
					t.Errorf("the page's chart data does not parse: %.200q", data)
				}
			}
		})
	}
}
