package plans

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTemplateJSON: a template reads back from the text it marshals to,
// placeholders and all, and a bad one is an error, never a template.
func TestTemplateJSON(t *testing.T) {
	tests := []struct {
		name, in string
		err      string // a substring of the error; "" for none
	}{
		{name: "literal", in: `"bench/topic"`},
		{name: "placeholders", in: `"%c/%u/%i/100%%"`},
		{name: "empty", in: `""`},
		{name: "unknown placeholder", in: `"bench/%x"`, err: "unknown placeholder %x"},
		{name: "lone percent", in: `"50%"`, err: "ends with a lone %"},
		{name: "not a string", in: `7`, err: "cannot unmarshal number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tpl Template
			err := json.Unmarshal([]byte(tt.in), &tpl)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := json.Marshal(tpl)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.in {
				t.Errorf("marshalled back as %s, want %s", out, tt.in)
			}
			if tt.name == "placeholders" && !(tpl.Uses('c') && tpl.Uses('u') && tpl.Uses('i')) {
				t.Errorf("placeholders not parsed: %+v", tpl)
			}
		})
	}
}
