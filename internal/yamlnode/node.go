package yamlnode

import (
	"strconv"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// IsNull reports whether n is a YAML null: an empty value, ~ or null,
// written plain. A quoted "null" or a block scalar is a string.
func IsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 &&
		n.ShortTag() == "!!null"
}

// Describe names what n is, for "expected X, got Y" messages: a mapping,
// a list, nothing (an empty value), a null as written, or a scalar's value
// quoted by [Quote]. A caller whose values may hold secrets describes
// scalars itself, with its own redaction, and calls Describe for the rest.
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	case yaml.ScalarNode:
		if IsNull(n) {
			if n.Value == "" {
				return "nothing"
			}
			return n.Value
		}
		return Quote(n.Value)
	}
	return "an unknown YAML node"
}

// quoteLimit is the longest value Quote shows whole, in bytes: enough to
// recognise a value, short enough that a pasted blob cannot drown the
// message around it.
const quoteLimit = 60

// Quote quotes s for a message (Go syntax, so control characters and
// invalid UTF-8 show as escapes), cut after quoteLimit bytes at a
// character boundary and marked with "..." when longer.
func Quote(s string) string {
	if len(s) > quoteLimit {
		cut := quoteLimit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "..."
	}
	return strconv.Quote(s)
}

// ForgetPositions clears the line and column of n and everything under
// it. A node parsed on its own (a --set value) has positions in its own
// text, which would be taken for positions in the file it is put into.
func ForgetPositions(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	for _, c := range n.Content {
		ForgetPositions(c)
	}
}
