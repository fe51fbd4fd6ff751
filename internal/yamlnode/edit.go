package yamlnode

import (
	"errors"

	yaml "go.yaml.in/yaml/v3"
)

// Errors of an Edit's moves. On either, the Edit stays where it was, so
// the caller can describe the node that is in the way.
var (
	// ErrNotMapping: a key step reached a node that is not a mapping
	// (nor a null that could become one).
	ErrNotMapping = errors.New("not a mapping")
	// ErrNotList: an index step reached a node that is not a list (nor a
	// null that could become one).
	ErrNotList = errors.New("not a list")
	// ErrPastEnd: an index step asked for an item more than one past the
	// end of the list (the index just past the end appends one), or a
	// negative one.
	ErrPastEnd = errors.New("index past the end of the list")
)

// Edit walks down a tree, making the mappings, lists and entries a path
// needs, and changes the tree only when committed: the changes are
// collected as the walk goes and made by Commit, so that a walk that
// fails half way leaves no half-made sections behind (which would cause
// more, confusing, problems). The caller drives it step by step, with
// its own rules where a step means more than a key or an index.
//
// Nodes are matched by identity: the tree must not change between the
// walk and Commit other than through the Edit.
type Edit struct {
	node, parent *yaml.Node
	changes      []func()
}

// NewEdit starts an edit at root. The root itself cannot be replaced: it
// has no parent to hold the replacement.
func NewEdit(root *yaml.Node) *Edit {
	return &Edit{node: root}
}

// Node is the node the walk has reached.
func (e *Edit) Node() *yaml.Node { return e.node }

// Enter moves to child, a node of the current node's Content chosen by
// the caller (a group found by name, say).
func (e *Edit) Enter(child *yaml.Node) {
	e.node, e.parent = child, e.node
}

// Replace schedules putting n where the current node is in its parent,
// and moves to n. At the root it only moves.
func (e *Edit) Replace(n *yaml.Node) {
	if parent, old := e.parent, e.node; parent != nil {
		e.changes = append(e.changes, func() {
			for i, c := range parent.Content {
				if c == old {
					parent.Content[i] = n
					return
				}
			}
		})
	}
	e.node = n
}

// Key moves to the value of key name in the current node. A null (other
// than the root) becomes an empty mapping; a missing key is added with a
// null value, and created says so. A node that is not a mapping gives
// ErrNotMapping.
func (e *Edit) Key(name string) (created bool, err error) {
	if IsNull(e.node) && e.parent != nil {
		e.Replace(&yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"})
	}
	if e.node.Kind != yaml.MappingNode {
		return false, ErrNotMapping
	}
	var child *yaml.Node
	for j := 0; j+1 < len(e.node.Content); j += 2 {
		if k := e.node.Content[j]; k.Kind == yaml.ScalarNode && k.Value == name {
			child = e.node.Content[j+1]
			break
		}
	}
	if child == nil {
		k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}
		child = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
		m := e.node
		e.changes = append(e.changes, func() { m.Content = append(m.Content, k, child) })
		created = true
	}
	e.Enter(child)
	return created, nil
}

// Item moves to item i of the current node. A null (other than the root)
// becomes an empty list; i equal to the list's length appends a null item,
// and created says so. A node that is not a list gives ErrNotList, an
// index further out ErrPastEnd.
func (e *Edit) Item(i int) (created bool, err error) {
	if IsNull(e.node) && e.parent != nil {
		e.Replace(&yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"})
	}
	if e.node.Kind != yaml.SequenceNode {
		return false, ErrNotList
	}
	n := len(e.node.Content)
	switch {
	case i < 0:
		return false, ErrPastEnd
	case i < n:
		e.Enter(e.node.Content[i])
		return false, nil
	case i == n:
		child := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
		s := e.node
		e.changes = append(e.changes, func() { s.Content = append(s.Content, child) })
		e.Enter(child)
		return true, nil
	}
	return false, ErrPastEnd
}

// Commit makes the collected changes, in the order the walk made them.
// An Edit is committed at most once.
func (e *Edit) Commit() {
	for _, c := range e.changes {
		c()
	}
	e.changes = nil
}
