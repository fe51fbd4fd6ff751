package yamlnode

import (
	yaml "go.yaml.in/yaml/v3"
)

// ProblemKind says what went wrong while expanding aliases.
type ProblemKind uint8

// The problems an [Expander] reports. The caller words them: the node
// budget, for one, means something to its users only in their terms.
const (
	// TooManyNodes: the node budget ran out. Reported once per
	// Expander, at the outermost alias being expanded (the one the user
	// wrote, rather than some copy deep inside it), or at the node where
	// the budget ran out when no alias is being expanded.
	TooManyNodes ProblemKind = iota + 1
	// UnknownAlias: an alias whose anchor yaml.v3 did not resolve.
	UnknownAlias
	// RecursiveAlias: an alias inside the node it refers to (&a [*a]),
	// which yaml.v3 accepts and whose expansion would never end.
	RecursiveAlias
	// BadMerge: a merge key (<<) whose value, once expanded, is neither
	// a mapping, a list of mappings nor null; Problem.Got is what it
	// was.
	BadMerge
)

// Problem is one problem found while expanding, at a node of the tree as
// written, so that its position is the user's text.
type Problem struct {
	Kind ProblemKind
	// Node is where the problem is: the alias (UnknownAlias,
	// RecursiveAlias), the merge value as written (BadMerge), see
	// TooManyNodes for that one.
	Node *yaml.Node
	// Got is, for BadMerge, the expanded value that is not a mapping.
	Got *yaml.Node
}

// Expander copies trees with every alias replaced by a copy of its
// anchored node and every merge key (<<: *base) merged, so that a reader
// of the copy sees plain trees, an edit can change one copy without the
// others, and problems point at the anchor's text.
//
// Its budget bounds the nodes made over all its calls: nested aliases
// ("billion laughs") would otherwise expand a few lines into billions of
// nodes. Past the budget it reports TooManyNodes once and puts nulls where
// the rest would have been; the caller should then drop the tree.
//
// An Expander is for one goroutine; it never panics, and a problem
// leaves a null (at the problem's position) in the copy and goes on, so
// that one pass finds every problem.
type Expander struct {
	budget     int
	overBudget bool
	// outerAlias is the outermost alias being expanded, if any.
	outerAlias *yaml.Node
	report     func(Problem)
}

// NewExpander returns an Expander that makes at most budget nodes and
// passes every problem to report (which must not be nil).
func NewExpander(budget int, report func(Problem)) *Expander {
	return &Expander{budget: budget, report: report}
}

// OverBudget reports whether the budget ran out: the copies made are cut
// short.
func (x *Expander) OverBudget() bool { return x.overBudget }

// ExpandRoot copies the tree under n. If n is a mapping, its keys for
// which skip returns true keep a null value in the copy: they hold
// anchors for aliases elsewhere (like docker compose's x- keys), and the
// aliases point at the original nodes. Not copying them keeps the budget
// for what is used, and puts an alias explosion's report where the alias
// is used. skip may be nil.
func (x *Expander) ExpandRoot(n *yaml.Node, skip func(key string) bool) *yaml.Node {
	if n.Kind == yaml.MappingNode {
		c := *n
		c.Content = make([]*yaml.Node, 0, len(n.Content))
		x.expandMapping(n, &c, map[*yaml.Node]bool{n: true}, skip)
		return &c
	}
	return x.expand(n, map[*yaml.Node]bool{})
}

// Expand copies the tree under n, sharing the budget with earlier calls.
func (x *Expander) Expand(n *yaml.Node) *yaml.Node {
	return x.expand(n, map[*yaml.Node]bool{})
}

// expand copies n; active holds the collections being copied, to catch an
// alias to one of its own ancestors (&a [*a]), which yaml.v3 accepts.
func (x *Expander) expand(n *yaml.Node, active map[*yaml.Node]bool) *yaml.Node {
	if x.budget--; x.budget < 0 {
		if !x.overBudget {
			x.overBudget = true
			at := n
			if x.outerAlias != nil {
				at = x.outerAlias
			}
			x.report(Problem{Kind: TooManyNodes, Node: at})
		}
		return nullNodeAt(n)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			x.report(Problem{Kind: UnknownAlias, Node: n})
			return nullNodeAt(n)
		}
		if active[n.Alias] {
			x.report(Problem{Kind: RecursiveAlias, Node: n})
			return nullNodeAt(n)
		}
		if x.outerAlias == nil {
			x.outerAlias = n
			defer func() { x.outerAlias = nil }()
		}
		return x.expand(n.Alias, active)
	case yaml.ScalarNode:
		c := *n
		c.Content = nil
		return &c
	case yaml.SequenceNode, yaml.MappingNode, yaml.DocumentNode:
		active[n] = true
		defer delete(active, n)
		c := *n
		c.Content = make([]*yaml.Node, 0, len(n.Content))
		if n.Kind != yaml.MappingNode {
			for _, ch := range n.Content {
				c.Content = append(c.Content, x.expand(ch, active))
			}
			return &c
		}
		x.expandMapping(n, &c, active, nil)
		return &c
	}
	// yaml.v3 produces no other kinds; keep the node so that the reader
	// of the copy reports it where it is.
	c := *n
	c.Content = nil
	return &c
}

// expandMapping copies the pairs of mapping n into c and applies merge
// keys the way YAML 1.1 defines them: the mapping's own keys win over
// merged ones, and earlier merged mappings win over later ones. The values
// of keys that skip (if not nil) accepts are left out (see ExpandRoot).
func (x *Expander) expandMapping(n, c *yaml.Node, active map[*yaml.Node]bool, skip func(string) bool) {
	// A merge source keeps the node as written (usually the alias) so
	// that problems point at the <<, not at the anchor.
	type source struct{ written, expanded *yaml.Node }
	var merges []source
	own := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			merges = append(merges, source{v, x.expand(v, active)})
			continue
		}
		if k.Kind == yaml.ScalarNode {
			own[k.Value] = true
			if skip != nil && skip(k.Value) {
				c.Content = append(c.Content, k, nullNodeAt(v))
				continue
			}
		}
		c.Content = append(c.Content, x.expand(k, active), x.expand(v, active))
	}
	for _, m := range merges {
		var sources []source
		switch e := m.expanded; {
		case e.Kind == yaml.MappingNode:
			sources = []source{m}
		case e.Kind == yaml.SequenceNode:
			for j, item := range e.Content {
				w := m.written
				if w.Kind == yaml.SequenceNode && j < len(w.Content) {
					w = w.Content[j]
				}
				sources = append(sources, source{w, item})
			}
		case IsNull(e):
			continue
		default:
			x.report(Problem{Kind: BadMerge, Node: m.written, Got: e})
			continue
		}
		for _, src := range sources {
			s := src.expanded
			if s.Kind != yaml.MappingNode {
				x.report(Problem{Kind: BadMerge, Node: src.written, Got: s})
				continue
			}
			for i := 0; i+1 < len(s.Content); i += 2 {
				k := s.Content[i]
				if k.Kind == yaml.ScalarNode {
					if own[k.Value] {
						continue
					}
					own[k.Value] = true
				}
				c.Content = append(c.Content, k, s.Content[i+1])
			}
		}
	}
}

// isMergeKey reports whether k is the YAML merge key <<, written plain.
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0
}

// nullNodeAt is a null scalar at n's position, standing in for a node that
// could not be expanded.
func nullNodeAt(n *yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
}
