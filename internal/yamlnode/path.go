package yamlnode

import (
	"fmt"
	"strconv"
	"strings"
)

// A path names a node in a tree by dotted keys and [index] steps:
//
//	duration                 a key of the root mapping
//	broker.url               a key of a key
//	groups[1].publish.qos    a list item (from 0), then keys
//	a.b[0][2]                indexes may follow each other
//
// A key is any text without '.', '[', ']', '=', space or tab; there is no
// quoting, since the keys that paths name are plain names.

// Step is one step of a path: a mapping key, or a list index.
type Step struct {
	// Key is the mapping key, when Index < 0.
	Key string
	// Index is the list index, or -1 for a key step.
	Index int
}

// PathErrorKind says what is wrong with a path.
type PathErrorKind uint8

// The ways a path can be wrong; PathError says which, and its caller words
// it with the examples its users know.
const (
	// EmptyPath: the path is "".
	EmptyPath PathErrorKind = iota + 1
	// EmptyKey: a part has no name (a..b, .a, [0]).
	EmptyKey
	// BadKey: a key holds a character keys cannot (Text is the key).
	BadKey
	// ExpectedIndex: after a key or index comes something other than
	// [index] (Text is the rest of the part, Key the key before it).
	ExpectedIndex
	// BadIndex: what is between [ and ] is not a whole number from 0 to
	// the limit (Text is that).
	BadIndex
)

// PathError is a path that [ParsePath] refused.
type PathError struct {
	Kind PathErrorKind
	// Key is the key of the part at fault.
	Key string
	// Text is the offending text (see the kinds).
	Text string
}

// Error words the problem plainly; callers with users of their own word
// it from the fields instead.
func (e *PathError) Error() string {
	switch e.Kind {
	case EmptyPath:
		return "the path is empty"
	case EmptyKey:
		return "every part of the path needs a name"
	case BadKey:
		return fmt.Sprintf("%q is not a key name", e.Text)
	case ExpectedIndex:
		return fmt.Sprintf("expected [index] after %q, got %q", e.Key, e.Text)
	case BadIndex:
		return fmt.Sprintf("the index %q is not a number from 0", e.Text)
	}
	return "invalid path"
}

// ParsePath splits path into steps; indexes above maxIndex are refused,
// which bounds the lists an edit can be asked to grow. It never returns
// an empty list without an error.
func ParsePath(path string, maxIndex int) ([]Step, error) {
	if path == "" {
		return nil, &PathError{Kind: EmptyPath}
	}
	var steps []Step
	for part := range strings.SplitSeq(path, ".") {
		name := part
		rest := ""
		if i := strings.IndexByte(part, '['); i >= 0 {
			name, rest = part[:i], part[i:]
		}
		if name == "" {
			return nil, &PathError{Kind: EmptyKey}
		}
		if strings.ContainsAny(name, "]= \t") {
			return nil, &PathError{Kind: BadKey, Key: name, Text: name}
		}
		steps = append(steps, Step{Key: name, Index: -1})
		for rest != "" {
			end := strings.IndexByte(rest, ']')
			if rest[0] != '[' || end < 0 {
				return nil, &PathError{Kind: ExpectedIndex, Key: name, Text: rest}
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || n < 0 || n > maxIndex || rest[1] == '+' {
				return nil, &PathError{Kind: BadIndex, Key: name, Text: rest[1:end]}
			}
			steps = append(steps, Step{Index: n})
			rest = rest[end+1:]
		}
	}
	return steps, nil
}
