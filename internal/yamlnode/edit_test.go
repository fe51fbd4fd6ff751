package yamlnode

import (
	"errors"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

func TestEdit(t *testing.T) {
	scalar := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	tests := []struct {
		name string
		data string
		// walk drives the edit and returns the error of the step that
		// stopped it, if any.
		walk func(e *Edit) error
		want string // the tree after Commit, as flow YAML; the original if walk fails
		err  error
	}{
		{name: "replace a key's value", data: "a: 1\nb: 2",
			walk: func(e *Edit) error { _, err := e.Key("b"); e.Replace(scalar("x")); return err },
			want: "{a: 1, b: x}"},
		{name: "add a missing key", data: "a: 1",
			walk: func(e *Edit) error {
				created, err := e.Key("b")
				if !created {
					t.Error("created = false")
				}
				e.Replace(scalar("x"))
				return err
			},
			want: "{a: 1, b: x}"},
		{name: "a null becomes a mapping", data: "a:",
			walk: func(e *Edit) error {
				if _, err := e.Key("a"); err != nil {
					return err
				}
				_, err := e.Key("b")
				e.Replace(scalar("x"))
				return err
			},
			want: "{a: {b: x}}"},
		{name: "a scalar is not a mapping", data: "a: 1",
			walk: func(e *Edit) error {
				if _, err := e.Key("a"); err != nil {
					return err
				}
				_, err := e.Key("b")
				if e.Node().Value != "1" {
					t.Errorf("after the error the edit is at %q, want the scalar in the way", e.Node().Value)
				}
				return err
			},
			err: ErrNotMapping, want: "{a: 1}"},
		{name: "a null root is not a mapping", data: "~",
			walk: func(e *Edit) error { _, err := e.Key("a"); return err },
			err:  ErrNotMapping, want: "~"},
		{name: "replace an item", data: "a: [1, 2]",
			walk: func(e *Edit) error {
				e.Key("a")
				_, err := e.Item(1)
				e.Replace(scalar("x"))
				return err
			},
			want: "{a: [1, x]}"},
		{name: "the index just past the end appends", data: "a: [1]",
			walk: func(e *Edit) error {
				e.Key("a")
				created, err := e.Item(1)
				if !created {
					t.Error("created = false")
				}
				e.Replace(scalar("x"))
				return err
			},
			want: "{a: [1, x]}"},
		{name: "further out is past the end", data: "a: [1]",
			walk: func(e *Edit) error { e.Key("a"); _, err := e.Item(2); return err },
			err:  ErrPastEnd, want: "{a: [1]}"},
		{name: "a negative index is past the end", data: "a: [1]",
			walk: func(e *Edit) error { e.Key("a"); _, err := e.Item(-1); return err },
			err:  ErrPastEnd, want: "{a: [1]}"},
		{name: "a null becomes a list", data: "a: ~",
			walk: func(e *Edit) error {
				e.Key("a")
				_, err := e.Item(0)
				e.Replace(scalar("x"))
				return err
			},
			want: "{a: [x]}"},
		{name: "a mapping is not a list", data: "a: {b: 1}",
			walk: func(e *Edit) error { e.Key("a"); _, err := e.Item(0); return err },
			err:  ErrNotList, want: "{a: {b: 1}}"},
		{name: "a failed walk leaves no half-made sections", data: "a: 1",
			walk: func(e *Edit) error {
				e.Key("b") // would add b: {c: ...}
				e.Key("c")
				_, err := e.Item(3)
				return err
			},
			err: ErrPastEnd, want: "{a: 1}"},
		{name: "enter a chosen child, then wrap it in a list", data: "g: [{n: a, s: t}]",
			walk: func(e *Edit) error {
				e.Key("g")
				e.Enter(e.Node().Content[0])
				e.Key("s")
				cur := e.Node()
				e.Replace(&yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{cur}})
				_, err := e.Item(1)
				e.Replace(scalar("u"))
				return err
			},
			want: "{g: [{n: a, s: [t, u]}]}"},
		{name: "the root cannot be replaced", data: "a: 1",
			walk: func(e *Edit) error { e.Replace(scalar("x")); return nil },
			want: "{a: 1}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := parseOne(t, tc.data)
			e := NewEdit(root)
			err := tc.walk(e)
			if !errors.Is(err, tc.err) {
				t.Fatalf("walk: %v, want %v", err, tc.err)
			}
			if got := render(t, root); err == nil && got != render(t, parseOne(t, tc.data)) {
				t.Errorf("the tree changed before Commit: %s", got)
			}
			if err == nil {
				e.Commit()
			}
			if got := render(t, root); got != tc.want {
				t.Errorf("tree %s, want %s", got, tc.want)
			}
		})
	}
}
