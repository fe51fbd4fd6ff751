package yamlnode

import (
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		data  string
		limit int
		docs  int
		err   string // a part of the expected error, "" for none
	}{
		{name: "nothing", data: "", limit: 2, docs: 0},
		{name: "comments only", data: "# a\n# b\n", limit: 2, docs: 0},
		{name: "one document", data: "a: 1\n", limit: 2, docs: 1},
		{name: "two documents", data: "a: 1\n---\nb: 2\n", limit: 2, docs: 2},
		{name: "the limit stops reading", data: "a: 1\n---\nb: 2\n---\nc: 3\n", limit: 2, docs: 2},
		{name: "a broken document past the limit is not read", data: "a: 1\n---\nb: [\n", limit: 1, docs: 1},
		{name: "syntax error", data: "a: [1, 2\nb: 3\n", limit: 2, err: "did not find expected ',' or ']'"},
		{name: "syntax error in the second document", data: "a: 1\n---\nb: c: d\n", limit: 2, err: "mapping values are not allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Parse([]byte(tc.data), tc.limit)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || docs != nil {
					t.Fatalf("Parse = %d docs, %v; want no docs and an error with %q", len(docs), err, tc.err)
				}
				return
			}
			if err != nil || len(docs) != tc.docs {
				t.Fatalf("Parse = %d docs, %v; want %d", len(docs), err, tc.docs)
			}
			for i, d := range docs {
				if d.Kind != yaml.DocumentNode {
					t.Errorf("docs[%d] is kind %v, not a document", i, d.Kind)
				}
			}
		})
	}
}

func TestIsEmptyDocument(t *testing.T) {
	tests := []struct {
		name  string
		data  string
		empty bool
	}{
		{name: "document start alone", data: "---\n", empty: true},
		{name: "null", data: "~\n", empty: true},
		{name: "anchored null", data: "&a ~\n", empty: false},
		{name: "quoted null", data: "'null'\n", empty: false},
		{name: "mapping", data: "a: 1\n", empty: false},
		{name: "scalar", data: "a\n", empty: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Parse([]byte(tc.data), 1)
			if err != nil || len(docs) != 1 {
				t.Fatalf("Parse = %d docs, %v", len(docs), err)
			}
			if got := IsEmptyDocument(docs[0]); got != tc.empty {
				t.Errorf("IsEmptyDocument = %v, want %v", got, tc.empty)
			}
		})
	}
}

// parseOne parses data as one document and returns its content, for
// tests.
func parseOne(t testing.TB, data string) *yaml.Node {
	t.Helper()
	docs, err := Parse([]byte(data), 1)
	if err != nil || len(docs) != 1 || len(docs[0].Content) != 1 {
		t.Fatalf("Parse(%q) = %d docs, %v", data, len(docs), err)
	}
	return docs[0].Content[0]
}

func TestIsNull(t *testing.T) {
	tests := []struct {
		name string
		data string
		null bool
	}{
		{name: "empty value", data: "a:", null: true},
		{name: "tilde", data: "a: ~", null: true},
		{name: "null", data: "a: null", null: true},
		{name: "Null", data: "a: Null", null: true},
		{name: "double-quoted null", data: `a: "null"`, null: false},
		{name: "single-quoted empty", data: "a: ''", null: false},
		{name: "literal block", data: "a: |\n  null\n", null: false},
		{name: "string", data: "a: x", null: false},
		{name: "empty mapping", data: "a: {}", null: false},
		{name: "empty list", data: "a: []", null: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := parseOne(t, tc.data).Content[1]
			if got := IsNull(v); got != tc.null {
				t.Errorf("IsNull = %v, want %v", got, tc.null)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		name string
		node *yaml.Node
		want string
	}{
		{name: "mapping", node: &yaml.Node{Kind: yaml.MappingNode}, want: "a mapping"},
		{name: "list", node: &yaml.Node{Kind: yaml.SequenceNode}, want: "a list"},
		{name: "alias", node: &yaml.Node{Kind: yaml.AliasNode}, want: "an alias"},
		{name: "document", node: &yaml.Node{Kind: yaml.DocumentNode}, want: "a document"},
		{name: "empty value", node: &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}, want: "nothing"},
		{name: "null as written", node: &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "~"}, want: "~"},
		{name: "string", node: &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "a\tb"}, want: `"a\tb"`},
		{name: "number", node: &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "3"}, want: `"3"`},
		{name: "unknown kind", node: &yaml.Node{Kind: 99}, want: "an unknown YAML node"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Describe(tc.node); got != tc.want {
				t.Errorf("Describe = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "short", in: "abc", want: `"abc"`},
		{name: "escapes", in: "a\"b\x01", want: `"a\"b\x01"`},
		{name: "exactly the limit", in: strings.Repeat("x", 60), want: `"` + strings.Repeat("x", 60) + `"`},
		{name: "over the limit", in: strings.Repeat("x", 61), want: `"` + strings.Repeat("x", 60) + `"...`},
		// é is 2 bytes: the 60th byte is inside one, so the cut moves
		// back to its start rather than splitting it.
		{name: "cut at a character boundary", in: strings.Repeat("x", 59) + "éé", want: `"` + strings.Repeat("x", 59) + `"...`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Quote(tc.in); got != tc.want {
				t.Errorf("Quote = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestForgetPositions(t *testing.T) {
	n := parseOne(t, "a: [1, {b: 2}]\n")
	ForgetPositions(n)
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Line != 0 || n.Column != 0 {
			t.Errorf("%q still at %d:%d", n.Value, n.Line, n.Column)
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
}
