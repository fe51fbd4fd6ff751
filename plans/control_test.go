package plans

import (
	"strings"
	"testing"
)

// TestControlCharactersInText checks that the plan's name and description,
// which reach terminals and CI logs, cannot carry control characters
// (an escape sequence would retitle the window or rewrite lines), while a
// description keeps its line breaks and tabs.
func TestControlCharactersInText(t *testing.T) {
	base := "groups:\n  - name: p\n    publish: {topic: t, every: 1s}\nduration: 1s\n"
	tests := []struct {
		name, yaml, err string
	}{
		{"a terminal escape in the name", "name: \"n\\e]0;pwned\\ax\"\n", `name: holds the control character U+001B at byte 1: a plan name must not contain control characters`},
		{"a NUL in the description", "description: \"a\\0b\"\n", `description: holds the control character U+0000 at byte 1: a description must not contain control characters`},
		{"a tab in the name", "name: \"a\\tb\"\n", "U+0009 at byte 1: a plan name"},
		{"line breaks and tabs in a description are text", "description: |\n  line one\n  \tline two\n", ""},
		{"unicode is not control", "name: \"ünï – ✓\"\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadBytes("c.yaml", []byte(tt.yaml+base), LoadOptions{})
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want one with %q", err, tt.err)
			}
		})
	}
}
