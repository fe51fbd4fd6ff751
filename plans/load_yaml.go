package plans

import (
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mqplan/mqplan/internal/yamlnode"
)

// This file is the plan's side of the YAML work that internal/yamlnode
// does: which documents a plan may have, how its problems are worded, and
// which values are hidden when they are shown.

// maxPlanNodes bounds the node tree after alias expansion. A real plan has a
// few hundred nodes; without a bound, nested aliases ("billion laughs")
// would expand a few lines into billions of nodes.
const maxPlanNodes = 100_000

// parse reads the single YAML document of the plan and returns its root
// mapping, or nil after recording why there is none.
func (l *loader) parse() *yaml.Node {
	docs, err := yamlnode.Parse(l.data, 2)
	if err != nil {
		l.errs = append(l.errs, l.syntaxError(err))
		return nil
	}
	if len(docs) == 0 || yamlnode.IsEmptyDocument(docs[0]) {
		l.errs = append(l.errs, &Error{Pos: Pos{File: l.file, Line: 1, Col: 1},
			Msg: "plan is empty: it needs at least a groups: list"})
		return nil
	}
	if len(docs) > 1 {
		// Keep going with the first document: its problems are worth
		// reporting too.
		l.errorf(docs[1], "", "the plan must be one YAML document, but a second one starts here (remove the ---)")
	}
	root := docs[0].Content[0]
	if root.Kind != yaml.MappingNode {
		l.errorf(root, "", "the plan must be a mapping of keys like name, broker, groups and duration; got %s", describeNode(root))
		return nil
	}
	return root
}

// syntaxError is the plan problem of a yaml.v3 syntax error, pinned to
// the character at fault (see yamlnode.Locate).
func (l *loader) syntaxError(err error) *Error {
	se := yamlnode.Locate(l.data, err)
	return &Error{Pos: Pos{File: l.file, Line: se.Line, Col: se.Col}, Msg: "invalid YAML: " + se.Msg + payloadHint(l.data, se.Line, se.Col)}
}

// describeNode names what n is, for "expected X, got Y" messages; a
// scalar is quoted by quoteValue, so a URL's password is hidden.
func describeNode(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && !yamlnode.IsNull(n) {
		return quoteValue(n.Value)
	}
	return yamlnode.Describe(n)
}

// quoteValue quotes s for a message, shortened so that a long value does not
// drown the message, with the password of any URL in it hidden (problems
// are printed, and a broker URL may carry credentials).
func quoteValue(s string) string {
	return yamlnode.Quote(RedactURL(redactBroken(s)))
}

// expandAliases returns a copy of the tree under n with every alias
// replaced by a copy of its anchored node and every merge key (<<: *base)
// merged, so that the decoder sees plain trees, sets can change one copy
// without the others, and problems point at the anchor's text. Top-level
// x- keys are ignored by the decoder; they hold anchors for aliases
// elsewhere, so their values are not copied (see yamlnode.ExpandRoot).
//
// The loader keeps the expander: --set values are expanded within the
// same node budget.
func (l *loader) expandAliases(n *yaml.Node) *yaml.Node {
	l.expander = yamlnode.NewExpander(maxPlanNodes, l.aliasProblem)
	return l.expander.ExpandRoot(n, func(key string) bool { return strings.HasPrefix(key, "x-") })
}

// aliasProblem words a problem of alias expansion as a plan problem.
func (l *loader) aliasProblem(p yamlnode.Problem) {
	switch p.Kind {
	case yamlnode.TooManyNodes:
		l.errorf(p.Node, "", "the plan has more than %d YAML nodes once its aliases are expanded: are aliases nested too deeply?", maxPlanNodes)
	case yamlnode.UnknownAlias:
		l.errorf(p.Node, "", "alias *%s refers to no anchor", p.Node.Value)
	case yamlnode.RecursiveAlias:
		l.errorf(p.Node, "", "alias *%s is inside the node it refers to: it would never end", p.Node.Value)
	case yamlnode.BadMerge:
		l.errorf(p.Node, "", "a merge key (<<) needs a mapping or a list of mappings, got %s", describeNode(p.Got))
	default:
		l.errorf(p.Node, "", "invalid alias or merge key")
	}
}
