package plans

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// maxPlanNodes bounds the node tree after alias expansion. A real plan has a
// few hundred nodes; without a bound, nested aliases ("billion laughs")
// would expand a few lines into billions of nodes.
const maxPlanNodes = 100_000

// parse reads the single YAML document of the plan and returns its root
// mapping, or nil after recording why there is none.
func (l *loader) parse() *yaml.Node {
	docs, err := parseYAMLDocuments(l.data, 2)
	if err != nil {
		l.errs = append(l.errs, l.syntaxError(err))
		return nil
	}
	if len(docs) == 0 || isEmptyDocument(docs[0]) {
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

// isEmptyDocument reports whether a document holds nothing: "---" alone, or
// only comments.
func isEmptyDocument(d *yaml.Node) bool {
	return len(d.Content) == 0 || (len(d.Content) == 1 && isNullNode(d.Content[0]) && d.Content[0].Anchor == "")
}

// parseYAMLDocuments decodes up to limit documents of data. yaml.v3 is called
// under recover: a parser bug must become a plan error, never a panic.
func parseYAMLDocuments(data []byte, limit int) (docs []*yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			docs, err = nil, fmt.Errorf("yaml: the YAML parser failed on this input (%v)", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for len(docs) < limit {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, err
		}
		if n.Kind != yaml.DocumentNode {
			continue
		}
		docs = append(docs, &n)
	}
	return docs, nil
}

// maxLocateBytes bounds the files whose syntax errors are located by
// parsing prefixes (see syntaxError); plans are a few kilobytes.
const maxLocateBytes = 256 << 10

// yamlLineRE matches the prefix of yaml.v3 syntax errors.
var yamlLineRE = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)

// syntaxError positions a yaml.v3 syntax error.
//
// yaml.v3 reports only a line, and not reliably: for parser errors (as
// opposed to scanner errors) it prints a 0-based line, sometimes the line
// where the enclosing block began rather than the one at fault. So the
// position is found by parsing prefixes of the file: the shortest prefix
// that fails with the same message ends at the offending character. It
// costs a few dozen parses of a file that is already known to be broken.
func (l *loader) syntaxError(err error) *Error {
	full := err.Error()
	msg := full
	reported := 0
	if m := yamlLineRE.FindStringSubmatch(full); m != nil {
		msg = full[len(m[0]):]
		if m[1] != "" {
			reported, _ = strconv.Atoi(m[1])
		}
	}
	line, col := locateSyntaxError(l.data, msg, reported)
	return &Error{Pos: Pos{File: l.file, Line: line, Col: col}, Msg: "invalid YAML: " + msg}
}

// locateSyntaxError returns the 1-based line and column of the syntax
// error msg in data; reported is yaml.v3's own line, the fallback.
func locateSyntaxError(data []byte, msg string, reported int) (line, col int) {
	if len(data) > maxLocateBytes {
		// Each probe parses a prefix again: past this size, settle for
		// yaml.v3's line rather than seconds of parsing.
		line = max(reported, 1)
		lines := bytes.Split(data, []byte("\n"))
		if line > len(lines) {
			line = len(lines)
		}
		return line, firstNonBlankCol(lines[line-1])
	}
	fails := func(n int) bool {
		_, err := parseYAMLDocuments(data[:n], 2)
		if err == nil {
			return false
		}
		s := err.Error()
		if m := yamlLineRE.FindString(s); m != "" {
			s = s[len(m):]
		}
		return s == msg
	}
	// ends[i] is the offset just past line i+1 (its newline included).
	var ends []int
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	// yaml.v3's line is usually right, or one short for parser errors:
	// try those first, and search only if neither is where the failure
	// starts.
	li := -1
	for _, c := range []int{reported - 1, reported} {
		if c >= 0 && c < len(ends) && fails(ends[c]) && (c == 0 || !fails(ends[c-1])) {
			li = c
			break
		}
	}
	if li < 0 {
		li = sort.Search(len(ends), func(i int) bool { return fails(ends[i]) })
	}
	if li == len(ends) {
		// The prefixes disagree with the whole file (it can happen when a
		// message depends on what follows): trust yaml.v3's line.
		li = min(max(reported, 1), len(ends)) - 1
		start := lineStartOffset(ends, li)
		return li + 1, firstNonBlankCol(data[start:ends[li]])
	}
	start := lineStartOffset(ends, li)
	k := sort.Search(ends[li]-start, func(j int) bool { return fails(start + j + 1) })
	text := data[start:ends[li]]
	if k >= len(text) {
		return li + 1, firstNonBlankCol(text)
	}
	// The parser notices a misplaced token only after reading some of it
	// (a key's ':' for instance): point at the token's first character.
	if strings.HasPrefix(msg, "did not find expected") {
		for k > 0 && !strings.ContainsRune(" \t[]{},", rune(text[k-1])) {
			k--
		}
	}
	// An unclosed [ or { is found at the end of what follows it: point
	// at the bracket itself, which is what needs fixing.
	if open := unclosedBracket(msg); open != 0 {
		if off := findUnclosed(data[:start+k], open); off >= 0 {
			ls := bytes.LastIndexByte(data[:off], '\n') + 1
			return bytes.Count(data[:off], []byte("\n")) + 1, utf8.RuneCount(data[ls:off]) + 1
		}
	}
	col = utf8.RuneCount(text[:k]) + 1
	// An unknown alias fails only once its whole name is read: point at
	// its *, where the name starts.
	if strings.HasPrefix(msg, "unknown anchor '") {
		if i := bytes.LastIndexByte(text[:k+1], '*'); i >= 0 {
			col = utf8.RuneCount(text[:i]) + 1
		}
	}
	return li + 1, col
}

// unclosedBracket returns the bracket a yaml.v3 message says is not
// closed, or 0.
func unclosedBracket(msg string) byte {
	switch msg {
	case "did not find expected ',' or ']'":
		return '['
	case "did not find expected ',' or '}'":
		return '{'
	}
	return 0
}

// findUnclosed returns the offset of the last open bracket in data that
// is not closed before its end, skipping quoted text and comments
// roughly; -1 if there is none.
func findUnclosed(data []byte, open byte) int {
	closing := byte(']')
	if open == '{' {
		closing = '}'
	}
	var stack []int
	var quote byte
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case (c == '"' || c == '\'') && (i == 0 || strings.IndexByte(" \t\n[{,:", data[i-1]) >= 0):
			// A quote opens a quoted scalar only where a token starts,
			// not inside plain text like don't.
			quote = c
		case c == '#' && (i == 0 || data[i-1] == ' ' || data[i-1] == '\t' || data[i-1] == '\n'):
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case c == open:
			stack = append(stack, i)
		case c == closing && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) == 0 {
		return -1
	}
	return stack[len(stack)-1]
}

func lineStartOffset(ends []int, i int) int {
	if i == 0 {
		return 0
	}
	return ends[i-1]
}

// firstNonBlankCol is the 1-based column of the first character of line that
// is not a space or tab, or 1.
func firstNonBlankCol(line []byte) int {
	for i, r := range string(line) {
		if r != ' ' && r != '\t' {
			return utf8.RuneCountInString(string(line[:i])) + 1
		}
	}
	return 1
}

// isNullNode reports whether n is a YAML null: an empty value, ~ or null.
func isNullNode(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 &&
		n.ShortTag() == "!!null"
}

// describeNode names what n is, for "expected X, got Y" messages.
func describeNode(n *yaml.Node) string {
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
		if isNullNode(n) {
			if n.Value == "" {
				return "nothing"
			}
			return n.Value
		}
		return quoteValue(n.Value)
	}
	return "an unknown YAML node"
}

// quoteValue quotes s for a message, shortened so that a long value does not
// drown the message, with the password of any URL in it hidden (problems
// are printed, and a broker URL may carry credentials).
func quoteValue(s string) string {
	const limit = 60
	s = RedactURL(s)
	if len(s) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "..."
	}
	return strconv.Quote(s)
}

// expandAliases returns a copy of the tree under n with every alias
// replaced by a copy of its anchored node and every merge key (<<: *base)
// merged, so that the decoder sees plain trees, sets can change one copy
// without the others, and problems point at the anchor's text.
func (l *loader) expandAliases(n *yaml.Node) *yaml.Node {
	l.budget = maxPlanNodes
	if n.Kind == yaml.MappingNode {
		// Top-level x- keys are ignored by the decoder; they hold anchors
		// for aliases elsewhere, which point at the original nodes. Not
		// copying them keeps the node budget for what is used, and puts
		// an alias explosion's report where the alias is used.
		c := *n
		c.Content = make([]*yaml.Node, 0, len(n.Content))
		l.expandMapping(n, &c, map[*yaml.Node]bool{n: true}, true)
		return &c
	}
	return l.expand(n, map[*yaml.Node]bool{})
}

// expand copies n; active holds the collections being copied, to catch an
// alias to one of its own ancestors (&a [*a]), which yaml.v3 accepts.
func (l *loader) expand(n *yaml.Node, active map[*yaml.Node]bool) *yaml.Node {
	if l.budget--; l.budget < 0 {
		if !l.overBudget {
			l.overBudget = true
			// Report at the outermost alias being expanded: the one the
			// user wrote at the top, rather than some copy deep inside.
			at := n
			if l.outerAlias != nil {
				at = l.outerAlias
			}
			l.errorf(at, "", "the plan has more than %d YAML nodes once its aliases are expanded: are aliases nested too deeply?", maxPlanNodes)
		}
		return nullNodeAt(n)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			l.errorf(n, "", "alias *%s refers to no anchor", n.Value)
			return nullNodeAt(n)
		}
		if active[n.Alias] {
			l.errorf(n, "", "alias *%s is inside the node it refers to: it would never end", n.Value)
			return nullNodeAt(n)
		}
		if l.outerAlias == nil {
			l.outerAlias = n
			defer func() { l.outerAlias = nil }()
		}
		return l.expand(n.Alias, active)
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
				c.Content = append(c.Content, l.expand(ch, active))
			}
			return &c
		}
		l.expandMapping(n, &c, active, false)
		return &c
	}
	// yaml.v3 produces no other kinds; keep the node so the decoder
	// reports it where it is.
	c := *n
	c.Content = nil
	return &c
}

// expandMapping copies the pairs of mapping n into c and applies merge
// keys the way YAML 1.1 defines them: the mapping's own keys win over
// merged ones, and earlier merged mappings win over later ones. With
// skipExt, the values of x- keys are left out (see expandAliases).
func (l *loader) expandMapping(n, c *yaml.Node, active map[*yaml.Node]bool, skipExt bool) {
	// A merge source keeps the node as written (usually the alias) so
	// that problems point at the <<, not at the anchor.
	type source struct{ written, expanded *yaml.Node }
	var merges []source
	own := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			merges = append(merges, source{v, l.expand(v, active)})
			continue
		}
		if k.Kind == yaml.ScalarNode {
			own[k.Value] = true
			if skipExt && strings.HasPrefix(k.Value, "x-") {
				c.Content = append(c.Content, k, nullNodeAt(v))
				continue
			}
		}
		c.Content = append(c.Content, l.expand(k, active), l.expand(v, active))
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
		case isNullNode(e):
			continue
		default:
			l.errorf(m.written, "", "a merge key (<<) needs a mapping or a list of mappings, got %s", describeNode(e))
			continue
		}
		for _, src := range sources {
			s := src.expanded
			if s.Kind != yaml.MappingNode {
				l.errorf(src.written, "", "a merge key (<<) needs a mapping or a list of mappings, got %s", describeNode(s))
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

// isMergeKey reports whether k is the YAML merge key <<.
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0
}

// nullNodeAt is a null scalar at n's position, standing in for a node that
// could not be expanded.
func nullNodeAt(n *yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
}
