package plans

import (
	"errors"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mqplan/mqplan/internal/yamlnode"
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

// maxSetIndex bounds list indexes in --set keys; no plan list is long.
const maxSetIndex = 1_000_000

// parseSetKey splits a --set key into steps, with the problems worded for
// --set.
func parseSetKey(key string) ([]yamlnode.Step, error) {
	steps, err := yamlnode.ParsePath(key, maxSetIndex)
	var pe *yamlnode.PathError
	if err == nil || !errors.As(err, &pe) {
		return steps, err
	}
	switch pe.Kind {
	case yamlnode.EmptyPath:
		return nil, fmt.Errorf("the key is empty: write key=value, like duration=10s")
	case yamlnode.EmptyKey:
		return nil, fmt.Errorf("invalid key: every part needs a name, like groups.pub.count or groups[1].count")
	case yamlnode.BadKey:
		return nil, fmt.Errorf("invalid key: %q is not a key name", pe.Text)
	case yamlnode.ExpectedIndex:
		return nil, fmt.Errorf("invalid key: expected [index] after %q, got %q", pe.Key, pe.Text)
	case yamlnode.BadIndex:
		return nil, fmt.Errorf("invalid key: the index %q is not a number from 0", pe.Text)
	}
	return nil, fmt.Errorf("invalid key: %v", err)
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
	docs, err := yamlnode.Parse([]byte(v), 2)
	if err != nil {
		return nil, fmt.Errorf("invalid value %s: %s", shown, strings.TrimPrefix(yamlnode.Message(err), "yaml: "))
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
// key resolves (see yamlnode.Edit), so that a bad key leaves no half-made
// sections behind to cause more errors.
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
	secret := steps[len(steps)-1].Key == "password" || strings.Contains(strings.ToLower(value), "password")
	val, err := l.parseSetValue(value, secret)
	if err != nil {
		fail("%v", err)
		return
	}

	e := yamlnode.NewEdit(root)
	path := ""
	// describe says what n is for a problem; a password already in the
	// plan (or set by an earlier --set) is not quoted.
	describe := func(n *yaml.Node) string {
		if n.Kind == yaml.ScalarNode && !yamlnode.IsNull(n) && strings.HasSuffix(path, "password") {
			return "a password (not shown)"
		}
		return describeNode(n)
	}
	for i, st := range steps {
		cur := e.Node()
		if st.Index < 0 && path == "groups" {
			// groups.<name>: a group chosen by its name.
			if cur.Kind != yaml.SequenceNode {
				fail("cannot choose group %q: groups is %s, not a list of groups", st.Key, describe(cur))
				return
			}
			var names []string
			var found *yaml.Node
			for _, g := range cur.Content {
				gn := l.groupName(g)
				if gn == st.Key && found == nil {
					found = g
				}
				if gn != "" {
					names = append(names, gn)
				}
			}
			if found == nil {
				fail("no group named %q (groups: %s)", st.Key, strings.Join(names, ", "))
				return
			}
			e.Enter(found)
			path = "groups." + st.Key
			continue
		}
		if st.Index < 0 {
			created, err := e.Key(st.Key)
			if err != nil {
				hint := ""
				if path == "drain" {
					// drain's two forms: a duration has no keys to set.
					hint = ": give the mapping form whole, like drain={max: 30s, quiet: 1s}"
				}
				fail("cannot set %s: %s is %s, not a mapping%s", st.Key, path, describe(e.Node()), hint)
				return
			}
			if created && st.Key == "groups" && i+1 < len(steps) {
				fail("the plan has no groups to change")
				return
			}
			path = planChildPath(path, st.Key)
			continue
		}
		// A list index.
		if path == "groups" {
			// Groups are chosen, never made: no null becomes the list,
			// and no index appends one.
			if cur.Kind != yaml.SequenceNode {
				fail("cannot use [%d]: %s is %s, not a list", st.Index, path, describe(cur))
				return
			}
			if n := len(cur.Content); st.Index >= n {
				fail("no group at index %d (the plan has %d group%s; indexes start at 0)", st.Index, n, pluralS(n))
				return
			}
			e.Enter(cur.Content[st.Index])
			path = planIndexPath(path, st.Index)
			continue
		}
		if strings.HasSuffix(path, ".subscribe") && cur.Kind != yaml.SequenceNode && !yamlnode.IsNull(cur) {
			// subscribe: may be a single filter; as a list it is item 0.
			e.Replace(&yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{cur}})
		}
		if _, err := e.Item(st.Index); err != nil {
			if n := e.Node(); errors.Is(err, yamlnode.ErrPastEnd) {
				fail("index %d is past the end of %s, which has %d item%s (use [%d] to add one)", st.Index, path, len(n.Content), pluralS(len(n.Content)), len(n.Content))
			} else {
				fail("cannot use [%d]: %s is %s, not a list", st.Index, path, describe(n))
			}
			return
		}
		path = planIndexPath(path, st.Index)
	}
	yamlnode.ForgetPositions(val)
	val = l.expander.Expand(val)
	l.origin[val] = key
	e.Replace(val)
	e.Commit()
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

func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
