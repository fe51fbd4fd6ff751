package yamlnode

import (
	"errors"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	key := func(k string) Step { return Step{Key: k, Index: -1} }
	idx := func(i int) Step { return Step{Index: i} }
	tests := []struct {
		name string
		path string
		want []Step
		err  *PathError
	}{
		{name: "one key", path: "duration", want: []Step{key("duration")}},
		{name: "keys", path: "broker.url", want: []Step{key("broker"), key("url")}},
		{name: "index then keys", path: "groups[1].publish.qos", want: []Step{key("groups"), idx(1), key("publish"), key("qos")}},
		{name: "indexes in a row", path: "a.b[0][2]", want: []Step{key("a"), key("b"), idx(0), idx(2)}},
		{name: "leading zeros", path: "a[007]", want: []Step{key("a"), idx(7)}},
		{name: "at the limit", path: "a[10]", want: []Step{key("a"), idx(10)}},
		{name: "names may hold dashes and $", path: "x-a.$b", want: []Step{key("x-a"), key("$b")}},
		{name: "empty", path: "", err: &PathError{Kind: EmptyPath}},
		{name: "empty part", path: "groups..count", err: &PathError{Kind: EmptyKey}},
		{name: "leading dot", path: ".a", err: &PathError{Kind: EmptyKey}},
		{name: "trailing dot", path: "a.", err: &PathError{Kind: EmptyKey}},
		{name: "index without a key", path: "[0]", err: &PathError{Kind: EmptyKey}},
		{name: "space in a key", path: "a b", err: &PathError{Kind: BadKey, Key: "a b", Text: "a b"}},
		{name: "stray ]", path: "a]", err: &PathError{Kind: BadKey, Key: "a]", Text: "a]"}},
		{name: "unclosed index", path: "groups[0.count", err: &PathError{Kind: ExpectedIndex, Key: "groups", Text: "[0"}},
		{name: "unclosed index at the end", path: "a[1", err: &PathError{Kind: ExpectedIndex, Key: "a", Text: "[1"}},
		{name: "text after an index", path: "a[1]b", err: &PathError{Kind: ExpectedIndex, Key: "a", Text: "b"}},
		{name: "not a number", path: "groups[x]", err: &PathError{Kind: BadIndex, Key: "groups", Text: "x"}},
		{name: "negative", path: "a[-1]", err: &PathError{Kind: BadIndex, Key: "a", Text: "-1"}},
		{name: "plus sign", path: "a[+1]", err: &PathError{Kind: BadIndex, Key: "a", Text: "+1"}},
		{name: "empty index", path: "a[]", err: &PathError{Kind: BadIndex, Key: "a", Text: ""}},
		{name: "past the limit", path: "a[11]", err: &PathError{Kind: BadIndex, Key: "a", Text: "11"}},
		{name: "overflow", path: "a[99999999999999999999]", err: &PathError{Kind: BadIndex, Key: "a", Text: "99999999999999999999"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePath(tc.path, 10)
			if tc.err != nil {
				var pe *PathError
				if !errors.As(err, &pe) || *pe != *tc.err || got != nil {
					t.Fatalf("ParsePath(%q) = %v, %#v; want %#v", tc.path, got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParsePath(%q) = %v, %v; want %v", tc.path, got, err, tc.want)
			}
		})
	}
}

func TestPathErrorMessages(t *testing.T) {
	tests := []struct {
		name string
		err  *PathError
		want string
	}{
		{name: "empty path", err: &PathError{Kind: EmptyPath}, want: "the path is empty"},
		{name: "empty key", err: &PathError{Kind: EmptyKey}, want: "every part of the path needs a name"},
		{name: "bad key", err: &PathError{Kind: BadKey, Text: "a b"}, want: `"a b" is not a key name`},
		{name: "expected index", err: &PathError{Kind: ExpectedIndex, Key: "a", Text: "b"}, want: `expected [index] after "a", got "b"`},
		{name: "bad index", err: &PathError{Kind: BadIndex, Text: "x"}, want: `the index "x" is not a number from 0`},
		{name: "unknown kind", err: &PathError{}, want: "invalid path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}

// nonCanonicalIndex matches an index ParsePath accepts in a form other
// than strconv.Itoa's.
var nonCanonicalIndex = regexp.MustCompile(`\[(-|0[0-9])`)

// FuzzParsePath checks ParsePath on any text: no panic, a non-empty list
// of well-formed steps or a PathError, and steps that spell the path
// again when the path is in its canonical form.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"duration", "groups[1].publish.qos", "a.b[0][2]", "groups..count", "a[", "a[1]b", "x[-0]", "[0]", ""} {
		f.Add(s)
	}
	const maxIndex = 1000
	f.Fuzz(func(t *testing.T, path string) {
		steps, err := ParsePath(path, maxIndex)
		if err != nil {
			var pe *PathError
			if !errors.As(err, &pe) || steps != nil {
				t.Fatalf("ParsePath(%q) = %v, %v; want no steps and a *PathError", path, steps, err)
			}
			return
		}
		if len(steps) == 0 || steps[0].Index >= 0 {
			t.Fatalf("ParsePath(%q) = %v: a path starts with a key", path, steps)
		}
		var b strings.Builder
		for i, st := range steps {
			switch {
			case st.Index < 0:
				if st.Key == "" || strings.ContainsAny(st.Key, ".[]= \t") {
					t.Fatalf("ParsePath(%q): bad key %q", path, st.Key)
				}
				if i > 0 {
					b.WriteByte('.')
				}
				b.WriteString(st.Key)
			case st.Index > maxIndex || st.Key != "":
				t.Fatalf("ParsePath(%q): bad index step %+v", path, st)
			default:
				b.WriteString("[" + strconv.Itoa(st.Index) + "]")
			}
		}
		// Indexes may be written with leading zeros (or as -0): compare
		// only paths whose indexes are canonical.
		if !nonCanonicalIndex.MatchString(path) && b.String() != path {
			t.Fatalf("ParsePath(%q) spells %q", path, b.String())
		}
	})
}
