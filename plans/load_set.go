package plans

import (
	"fmt"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// A --set override is key=value. The key is a dotted path into the plan:
//
//	duration                      a top-level key
//	broker.url                    a key in a section (made if absent)
//	groups.pub.count              a group chosen by name ...
//	groups[1].publish.qos         ... or by index (from 0)
//	groups.sub.subscribe[0].topic an item of a list; the index just past
//	                              the end appends one
//
// The value is a YAML scalar ("10s", "mqtt://h:1883", "a/#"), or a flow
// list or mapping ("[a, b]", "{topic: a/#, qos: 1}"). It replaces (or
// creates) the node before decoding, so it is checked exactly like the
// file's values; problems in it are reported as "--set: <key>: ...".

// setStep is one step of a --set key: a mapping key or a list index.
type setStep struct {
	name  string // the key, when index < 0
	index int    // the list index, or -1
}

// maxSetIndex bounds list indexes in --set keys; no plan list is long.
const maxSetIndex = 1_000_000

// parseSetKey splits a --set key into steps.
func parseSetKey(key string) ([]setStep, error) {
	if key == "" {
		return nil, fmt.Errorf("the key is empty: write key=value, like duration=10s")
	}
	var steps []setStep
	for part := range strings.SplitSeq(key, ".") {
		name := part
		rest := ""
		if i := strings.IndexByte(part, '['); i >= 0 {
			name, rest = part[:i], part[i:]
		}
		if name == "" {
			return nil, fmt.Errorf("invalid key: every part needs a name, like groups.pub.count or groups[1].count")
		}
		if strings.ContainsAny(name, "]= \t") {
			return nil, fmt.Errorf("invalid key: %q is not a key name", name)
		}
		steps = append(steps, setStep{name: name, index: -1})
		for rest != "" {
			end := strings.IndexByte(rest, ']')
			if rest[0] != '[' || end < 0 {
				return nil, fmt.Errorf("invalid key: expected [index] after %q, got %q", name, rest)
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || n < 0 || n > maxSetIndex || rest[1] == '+' {
				return nil, fmt.Errorf("invalid key: the index %q is not a number from 0", rest[1:end])
			}
			steps = append(steps, setStep{index: n})
			rest = rest[end+1:]
		}
	}
	return steps, nil
}

// parseSetValue turns a --set value into a node. Flow collections and
// quoted strings are parsed as YAML; anything else is taken as it is,
// like a plain YAML scalar, so that "a/#" or "p99 < 10ms # note" need no
// quoting (YAML would read # after a space as a comment).
//
// secret says the value is a password: problems then describe it without
// quoting it.
func (l *loader) parseSetValue(v string, secret bool) (*yaml.Node, error) {
	v = strings.TrimSpace(v)
	shown := quoteValue(v)
	if secret {
		shown = "(not shown: it is or holds a password)"
	}
	if v == "" || !strings.ContainsAny(v[:1], "[{\"'") {
		n := &yaml.Node{Kind: yaml.ScalarNode, Value: v}
		n.Tag = n.ShortTag()
		return n, nil
	}
	docs, err := parseYAMLDocuments([]byte(v), 2)
	if err != nil {
		return nil, fmt.Errorf("invalid value %s: %s", shown, strings.TrimPrefix(yamlLineRE.ReplaceAllString(err.Error(), ""), "yaml: "))
	}
	if len(docs) != 1 || len(docs[0].Content) != 1 {
		return nil, fmt.Errorf("invalid value %s: write one value, like [a, b] or {topic: t, qos: 1}", shown)
	}
	n := docs[0].Content[0]
	if (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && n.Style&yaml.FlowStyle == 0 {
		return nil, fmt.Errorf("invalid value %s: write one value, like [a, b] or {topic: t, qos: 1}", shown)
	}
	return n, nil
}

// applySets applies the --set overrides in order; a later one wins.
func (l *loader) applySets(root *yaml.Node, sets []string) {
	for _, s := range sets {
		l.applySet(root, s)
	}
}

// applySet applies one override. The tree is changed only if the whole
// key resolves: the changes are collected and made at the end, so that a
// bad key leaves no half-made sections behind to cause more errors.
func (l *loader) applySet(root *yaml.Node, raw string) {
	key, value, hasValue := strings.Cut(raw, "=")
	key = strings.TrimSpace(key)
	fail := func(format string, args ...any) {
		l.errs = append(l.errs, &Error{Pos: Pos{File: setPosFile}, Path: key, Msg: fmt.Sprintf(format, args...)})
	}
	if !hasValue {
		key = strings.TrimSpace(raw)
		fail("expected key=value, like duration=10s or groups.pub.count=50")
		return
	}
	steps, err := parseSetKey(key)
	if err != nil {
		fail("%v", err)
		return
	}
	// A value is a secret when it is a password, or holds one (a group
	// or mapping given whole: groups.pub={password: ...}).
	secret := steps[len(steps)-1].name == "password" || strings.Contains(strings.ToLower(value), "password")
	val, err := l.parseSetValue(value, secret)
	if err != nil {
		fail("%v", err)
		return
	}

	var changes []func()
	// replace schedules putting n where old is in parent.
	replace := func(parent, old, n *yaml.Node) {
		changes = append(changes, func() {
			for i, c := range parent.Content {
				if c == old {
					parent.Content[i] = n
					return
				}
			}
		})
	}
	cur, parent := root, (*yaml.Node)(nil)
	path := ""
	// describe says what cur is for a problem; a password already in the
	// plan (or set by an earlier --set) is not quoted.
	describe := func(n *yaml.Node) string {
		if n.Kind == yaml.ScalarNode && !isNullNode(n) && strings.HasSuffix(path, "password") {
			return "a password (not shown)"
		}
		return describeNode(n)
	}
	for i, st := range steps {
		if st.index < 0 && path == "groups" {
			// groups.<name>: a group chosen by its name.
			if cur.Kind != yaml.SequenceNode {
				fail("cannot choose group %q: groups is %s, not a list of groups", st.name, describe(cur))
				return
			}
			var names []string
			var found *yaml.Node
			for _, g := range cur.Content {
				gn := l.groupName(g)
				if gn == st.name && found == nil {
					found = g
				}
				if gn != "" {
					names = append(names, gn)
				}
			}
			if found == nil {
				fail("no group named %q (groups: %s)", st.name, strings.Join(names, ", "))
				return
			}
			cur, parent = found, cur
			path = "groups." + st.name
			continue
		}
		if st.index < 0 {
			if isNullNode(cur) && parent != nil {
				m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				replace(parent, cur, m)
				cur = m
			}
			if cur.Kind != yaml.MappingNode {
				fail("cannot set %s: %s is %s, not a mapping", st.name, path, describe(cur))
				return
			}
			var child *yaml.Node
			for j := 0; j+1 < len(cur.Content); j += 2 {
				if k := cur.Content[j]; k.Kind == yaml.ScalarNode && k.Value == st.name {
					child = cur.Content[j+1]
					break
				}
			}
			if child == nil {
				if st.name == "groups" && i+1 < len(steps) {
					fail("the plan has no groups to change")
					return
				}
				k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: st.name}
				child = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
				m := cur
				changes = append(changes, func() { m.Content = append(m.Content, k, child) })
			}
			cur, parent = child, cur
			path = planChildPath(path, st.name)
			continue
		}
		// A list index.
		if strings.HasSuffix(path, ".subscribe") && cur.Kind != yaml.SequenceNode && !isNullNode(cur) {
			// subscribe: may be a single filter; as a list it is item 0.
			s := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{cur}}
			replace(parent, cur, s)
			cur = s
		}
		if isNullNode(cur) && parent != nil && path != "groups" {
			s := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			replace(parent, cur, s)
			cur = s
		}
		if cur.Kind != yaml.SequenceNode {
			fail("cannot use [%d]: %s is %s, not a list", st.index, path, describe(cur))
			return
		}
		n := len(cur.Content)
		var child *yaml.Node
		switch {
		case st.index < n:
			child = cur.Content[st.index]
		case path == "groups":
			fail("no group at index %d (the plan has %d group%s; indexes start at 0)", st.index, n, pluralS(n))
			return
		case st.index == n:
			child = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
			s := cur
			changes = append(changes, func() { s.Content = append(s.Content, child) })
		default:
			fail("index %d is past the end of %s, which has %d item%s (use [%d] to add one)", st.index, path, n, pluralS(n), n)
			return
		}
		cur, parent = child, cur
		path = planIndexPath(path, st.index)
	}
	forgetPositions(val)
	val = l.expand(val, map[*yaml.Node]bool{})
	l.origin[val] = key
	replace(parent, cur, val)
	for _, c := range changes {
		c()
	}
}

// groupName is the name of group node g as --set matches it: its value
// with ${VAR} expanded ("" if it has none).
func (l *loader) groupName(g *yaml.Node) string {
	if g.Kind != yaml.MappingNode {
		return ""
	}
	for j := 0; j+1 < len(g.Content); j += 2 {
		if k, v := g.Content[j], g.Content[j+1]; k.Kind == yaml.ScalarNode && k.Value == "name" && v.Kind == yaml.ScalarNode {
			if s, err := expandEnvVars(v.Value, l.lookup); err == nil {
				return s
			}
			return v.Value
		}
	}
	return ""
}

// forgetPositions clears the positions a --set value got from being
// parsed on its own, so that its problems say "--set", not a line of the
// plan file.
func forgetPositions(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	for _, c := range n.Content {
		forgetPositions(c)
	}
}

func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
