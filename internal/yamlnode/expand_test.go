package yamlnode

import (
	"fmt"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// render prints n as flow YAML on one line, for comparing trees; n is
// left as it is.
func render(t testing.TB, n *yaml.Node) string {
	t.Helper()
	b, err := yaml.Marshal(flowCopy(n))
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// flowCopy copies n in flow style, without anchors, and with empty nulls
// written ~ (yaml.v3 would print them as an empty quoted string).
func flowCopy(n *yaml.Node) *yaml.Node {
	c := *n
	if c.Kind == yaml.MappingNode || c.Kind == yaml.SequenceNode {
		c.Style |= yaml.FlowStyle
	}
	c.Anchor = ""
	if IsNull(&c) && c.Value == "" {
		c.Value = "~"
	}
	c.Content = nil
	for _, ch := range n.Content {
		c.Content = append(c.Content, flowCopy(ch))
	}
	return &c
}

// collected holds an Expander's problems as kind@line:col.
type collected []string

func (c *collected) add(p Problem) {
	*c = append(*c, fmt.Sprintf("%s@%d:%d", kindName(p.Kind), p.Node.Line, p.Node.Column))
}

func kindName(k ProblemKind) string {
	switch k {
	case TooManyNodes:
		return "TooManyNodes"
	case UnknownAlias:
		return "UnknownAlias"
	case RecursiveAlias:
		return "RecursiveAlias"
	case BadMerge:
		return "BadMerge"
	}
	return "?"
}

func TestExpand(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		budget   int
		want     string // the copy, as flow YAML
		problems []string
	}{
		{name: "no aliases", data: "a: [1, {b: 2}]", budget: 100, want: "{a: [1, {b: 2}]}"},
		{name: "alias to a scalar", data: "a: &x 1\nb: *x", budget: 100, want: "{a: 1, b: 1}"},
		{name: "alias to a mapping", data: "a: &x {c: 1}\nb: *x", budget: 100, want: "{a: {c: 1}, b: {c: 1}}"},
		{name: "merge key: own keys win", data: "base: &b {x: 1, y: 2}\nm: {<<: *b, y: 3}", budget: 100,
			want: "{base: {x: 1, y: 2}, m: {y: 3, x: 1}}"},
		{name: "merge list: earlier sources win", data: "a: &a {x: 1}\nb: &b {x: 2, y: 2}\nm: {<<: [*a, *b]}", budget: 100,
			want: "{a: {x: 1}, b: {x: 2, y: 2}, m: {x: 1, y: 2}}"},
		{name: "quoted << is a key", data: "a: &a {x: 1}\nm: {'<<': *a}", budget: 100, want: "{a: {x: 1}, m: {'<<': {x: 1}}}"},
		{name: "null merge is nothing", data: "m: {<<: ~, x: 1}", budget: 100, want: "{m: {x: 1}}"},
		{name: "merge of a scalar", data: "m:\n  <<: 5\n  x: 1", budget: 100, want: "{m: {x: 1}}",
			problems: []string{"BadMerge@2:7"}},
		{name: "merge list with a scalar", data: "a: &a {x: 1}\nm:\n  <<: [*a, 5]", budget: 100, want: "{a: {x: 1}, m: {x: 1}}",
			problems: []string{"BadMerge@3:12"}},
		{name: "alias inside its own anchor", data: "a: &x [1, *x]", budget: 100, want: "{a: [1, ~]}",
			problems: []string{"RecursiveAlias@1:11"}},
		// a, b and c take 1366 nodes (an alias counts one, its copy the
		// rest); the first *c of d would take 1233 more.
		{name: "billion laughs, reported once at the outer alias",
			data:   "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c]",
			budget: 1400, problems: []string{"TooManyNodes@4:5"}},
		{name: "over budget without aliases", data: "a: [1, 2, 3, 4]", budget: 4, problems: []string{"TooManyNodes@1:11"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got collected
			x := NewExpander(tc.budget, got.add)
			root := parseOne(t, tc.data)
			before := render(t, parseOne(t, tc.data))
			c := x.ExpandRoot(root, nil)
			if strings.Join(got, " ") != strings.Join(tc.problems, " ") {
				t.Errorf("problems %v, want %v", got, tc.problems)
			}
			if x.OverBudget() != (len(tc.problems) > 0 && strings.HasPrefix(tc.problems[0], "TooManyNodes")) {
				t.Errorf("OverBudget = %v", x.OverBudget())
			}
			if tc.want != "" {
				if s := render(t, c); s != tc.want {
					t.Errorf("copy %s, want %s", s, tc.want)
				}
			}
			if after := render(t, root); after != before {
				t.Errorf("the original changed: %s, was %s", after, before)
			}
		})
	}
}

// TestExpandUnknownAlias checks an alias without its anchor, which yaml.v3
// never produces but a hand-made tree can hold.
func TestExpandUnknownAlias(t *testing.T) {
	var got collected
	x := NewExpander(100, got.add)
	n := &yaml.Node{Kind: yaml.SequenceNode, Line: 1, Column: 1, Content: []*yaml.Node{
		{Kind: yaml.AliasNode, Value: "nope", Line: 1, Column: 2},
	}}
	c := x.Expand(n)
	if len(got) != 1 || got[0] != "UnknownAlias@1:2" {
		t.Errorf("problems %v", got)
	}
	if !IsNull(c.Content[0]) || c.Content[0].Line != 1 || c.Content[0].Column != 2 {
		t.Errorf("the alias became %+v, want a null at its position", c.Content[0])
	}
}

// TestExpandRootSkip checks that the values of skipped top-level keys are
// not copied (nor counted against the budget), while aliases to their
// anchors still expand.
func TestExpandRootSkip(t *testing.T) {
	var got collected
	x := NewExpander(8, got.add)
	root := parseOne(t, "x-big: &b [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nx-s: &s 1\na: *s\nb: {x-c: 1}")
	c := x.ExpandRoot(root, func(k string) bool { return strings.HasPrefix(k, "x-") })
	if len(got) != 0 {
		t.Fatalf("problems %v", got)
	}
	// x-c is below the top level: copied.
	if s := render(t, c); s != "{x-big: ~, x-s: ~, a: 1, b: {x-c: 1}}" {
		t.Errorf("copy %s", s)
	}
}

// TestExpandSharesBudget checks that the budget covers every call of one
// Expander: a --set value cannot get a fresh one.
func TestExpandSharesBudget(t *testing.T) {
	var got collected
	x := NewExpander(5, got.add)
	x.ExpandRoot(parseOne(t, "a: [1, 2]"), nil) // 4 nodes: a, the list, 1, 2
	if x.OverBudget() {
		t.Fatal("over budget after the first tree")
	}
	n := parseOne(t, "[1]")
	c := x.Expand(n)
	if !x.OverBudget() || len(got) != 1 {
		t.Fatalf("OverBudget = %v, problems %v; want over budget once", x.OverBudget(), got)
	}
	if !IsNull(c.Content[0]) {
		t.Errorf("the node past the budget is %+v, want a null", c.Content[0])
	}
	x.Expand(parseOne(t, "[1, 2]"))
	if len(got) != 1 {
		t.Errorf("problems %v: the budget is reported once", got)
	}
}
