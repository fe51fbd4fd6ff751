package yamlnode

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestLocate checks that yaml.v3 syntax errors, which carry only an
// approximate line, are pinned to the character at fault.
func TestLocate(t *testing.T) {
	tests := []struct {
		name, data string
		line, col  int
		msg        string
	}{
		{"mapping value in a value", "a: 1\nb: c: d\n", 2, 5, "mapping values are not allowed in this context"},
		{"dedented key", "groups:\n  - name: a\n    count: 1\n   bad: 2\n", 4, 4, "did not find expected '-' indicator"},
		{"key after a list", "- a\nb: 1\n", 2, 1, "did not find expected '-' indicator"},
		{"unclosed list", "a: [1, 2\nb: 3\n", 1, 4, "did not find expected ',' or ']'"},
		{"unclosed mapping after a quote in plain text", "a: don't\nb: {c: 1\n", 2, 4, "did not find expected ',' or '}'"},
		{"unclosed mapping with a bracket in a comment", "a: 1 # {\nb: {c: 1\n", 2, 4, "did not find expected ',' or '}'"},
		{"unclosed mapping with a bracket in quotes", "a: \"{\\\"\"\nb: {c: 1\n", 2, 4, "did not find expected ',' or '}'"},
		{"unclosed quote", "x: 1\ny: \"abc\n\nz: 1\n", 2, 4, "found unexpected end of stream"},
		{"unknown alias", "a: 1\nb: [x, *nope]\n", 2, 8, "unknown anchor 'nope' referenced"},
		{"control character", "a: \"x\x01\"\n", 1, 6, "control characters are not allowed"},
		{"tab indentation", "a: 1\n\tb: 2\n", 2, 1, "found a tab character that violates indentation"},
		{"stray character", "a: @x\n", 1, 4, "found character that cannot start any token"},
		{"stray character after multi-byte text", "é: @x\n", 1, 4, "found character that cannot start any token"},
		{"content after the document end", "a: 1\n...\nb\n", 3, 1, "did not find expected <document start>"},
		{"no final newline", "a: 1\nb: c: d", 2, 5, "mapping values are not allowed in this context"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.data)
			_, err := Parse(data, 2)
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			got := Locate(data, err)
			want := &SyntaxError{Line: tc.line, Col: tc.col, Msg: tc.msg}
			if *got != *want {
				t.Errorf("Locate = %v, want %v", got, want)
			}
		})
	}
}

// TestLocateLarge checks that past maxLocateBytes the locator settles for
// yaml.v3's line, at its first character, instead of parsing prefixes.
func TestLocateLarge(t *testing.T) {
	tests := []struct {
		name      string
		err       string
		line, col int
	}{
		{name: "reported line", err: "yaml: line 2: mapping values are not allowed in this context", line: 2, col: 3},
		{name: "no line", err: "yaml: something failed", line: 1, col: 1},
		{name: "line past the end", err: "yaml: line 99: x", line: 4, col: 1},
	}
	data := []byte("a: 1\n  b: c: d\n# " + strings.Repeat("x", maxLocateBytes) + "\n")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Locate(data, errors.New(tc.err))
			if got.Line != tc.line || got.Col != tc.col {
				t.Errorf("Locate = %d:%d, want %d:%d", got.Line, got.Col, tc.line, tc.col)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	tests := []struct {
		name, err, want string
	}{
		{name: "with a line", err: "yaml: line 3: did not find expected key", want: "did not find expected key"},
		{name: "without a line", err: "yaml: control characters are not allowed", want: "control characters are not allowed"},
		{name: "not yaml.v3's", err: "boom", want: "boom"},
		{name: "prefix only at the start", err: "x yaml: line 1: y", want: "x yaml: line 1: y"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Message(errors.New(tc.err)); got != tc.want {
				t.Errorf("Message = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFindUnclosed(t *testing.T) {
	tests := []struct {
		name string
		data string
		open byte
		want int
	}{
		{name: "none", data: "a: [1]", open: '[', want: -1},
		{name: "one", data: "a: [1", open: '[', want: 3},
		{name: "the last unclosed", data: "a: [1, [2", open: '[', want: 7},
		{name: "inner closed", data: "a: [1, [2]", open: '[', want: 3},
		{name: "in a comment", data: "a: 1 # [\nb: 2", open: '[', want: -1},
		{name: "in double quotes", data: `a: "[\"["`, open: '[', want: -1},
		{name: "in single quotes", data: "a: '['", open: '[', want: -1},
		{name: "apostrophe in plain text", data: "a: don't {", open: '{', want: 9},
		{name: "hash inside a word", data: "a: b#{", open: '{', want: 5},
		{name: "other bracket", data: "a: {[", open: '{', want: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := findUnclosed([]byte(tc.data), tc.open); got != tc.want {
				t.Errorf("findUnclosed(%q, %c) = %d, want %d", tc.data, tc.open, got, tc.want)
			}
		})
	}
}

func TestFirstNonBlankCol(t *testing.T) {
	tests := []struct {
		name, line string
		want       int
	}{
		{name: "empty", line: "", want: 1},
		{name: "blank", line: " \t ", want: 1},
		{name: "at the start", line: "a", want: 1},
		{name: "after spaces and a tab", line: "  \tb", want: 4},
		{name: "characters, not bytes", line: "\u00a0x", want: 1}, // a no-break space is not blank
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FirstNonBlankCol([]byte(tc.line)); got != tc.want {
				t.Errorf("FirstNonBlankCol(%q) = %d, want %d", tc.line, got, tc.want)
			}
		})
	}
}

// FuzzLocate feeds arbitrary input to Parse and, when it fails, to
// Locate: whatever the input, the position must be on a line of the
// input, at most just past its end, and the message yaml.v3's.
func FuzzLocate(f *testing.F) {
	for _, s := range []string{
		"a: 1\nb: c: d\n",
		"a: [1, 2\nb: 3\n",
		"a: don't\nb: {c: 1\n",
		"x: 1\ny: \"abc\n\nz: 1\n",
		"a: 1\nb: [x, *nope]\n",
		"a: 1\n\tb: 2\n",
		"é: @x",
		"a: 1\n...\nb\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<10 {
			return // Locate parses prefixes: keep each input quick
		}
		_, err := Parse(data, 2)
		if err == nil {
			return
		}
		se := Locate(data, err)
		if se.Msg != Message(err) {
			t.Fatalf("Msg %q, want %q", se.Msg, Message(err))
		}
		lines := bytes.Split(data, []byte("\n"))
		if se.Line < 1 || se.Line > len(lines) {
			t.Fatalf("line %d of %d", se.Line, len(lines))
		}
		// The column counts characters, but the prefix search may end
		// inside a multi-byte character, whose bytes then count one
		// each: the bound is the line's bytes, not its characters.
		if n := len(lines[se.Line-1]); se.Col < 1 || se.Col > n+1 {
			t.Fatalf("%d:%d: column outside the line of %d bytes", se.Line, se.Col, n)
		}
	})
}
