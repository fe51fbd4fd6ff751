package partial

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/mqplan/mqplan/plans"
)

// PlanSource is the plan a run was judged by, as the merge re-loads it:
// the plan file's text and the --set overrides, with every secret
// redacted (a password's value, a URL's user information; a ${VAR}
// reference stays, the merging process's environment resolves it), and
// the resolved thresholds and group names the run had, so that a merge
// whose environment resolves the plan differently is refused rather
// than judged by other rules.
type PlanSource struct {
	// File is the plan's name as given (relative TLS paths and the
	// default plan name come from it).
	File   string   `json:"file"`
	Source string   `json:"source"`
	Sets   []string `json:"sets,omitempty"`
	// Thresholds are the plan's own threshold expressions as resolved in
	// the run (builtin checks left out); Groups its group names.
	Thresholds []string `json:"thresholds,omitempty"`
	Groups     []string `json:"groups"`
}

// NewPlanSource redacts the plan text and overrides a run loaded, and
// takes the resolved thresholds and group names from its program.
func NewPlanSource(file string, source []byte, sets []string, prog *plans.Program) PlanSource {
	ps := PlanSource{File: file, Source: redactSource(source)}
	for _, s := range sets {
		ps.Sets = append(ps.Sets, redactSet(s))
	}
	ps.Thresholds, ps.Groups = Resolved(prog)
	return ps
}

// Resolved is what a program's verdict depends on beyond the measured
// figures: its own thresholds' expressions and its group names.
func Resolved(prog *plans.Program) (thresholds, groups []string) {
	for _, t := range prog.Thresholds {
		if !t.Builtin {
			thresholds = append(thresholds, t.String())
		}
	}
	for _, g := range prog.Groups {
		groups = append(groups, g.Name)
	}
	return thresholds, groups
}

// Hash identifies the plan: the sha256 of its file name, redacted text
// and overrides, equal on every part of one run.
func (ps *PlanSource) Hash() string {
	h := sha256.New()
	for _, s := range append([]string{ps.File, ps.Source}, ps.Sets...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// redacted replaces a secret's value.
const redacted = "REDACTED"

// redactSource is the plan text with every password's value and every
// URL's user information redacted. The secrets are replaced where they
// stand, the rest of the text left byte for byte, so that the positions
// the report shows (a threshold's line and column) stay the run's. A
// secret written over several lines has the whole text re-written
// instead (positions may then move, figures not). Text that is not YAML
// is kept as it is: the run loaded it, so it is YAML.
func redactSource(src []byte) string {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return string(src)
	}
	var edits []edit
	whole := false
	collectSecrets(&doc, func(n *yaml.Node, value string) {
		e, ok := locate(src, n, value)
		if !ok {
			whole = true
		}
		edits = append(edits, e)
		n.Value, n.Tag, n.Style = value, "!!str", 0
	})
	switch {
	case len(edits) == 0:
		return string(src)
	case whole:
		out, err := yaml.Marshal(&doc)
		if err != nil {
			return ""
		}
		return string(out)
	}
	slices.SortFunc(edits, func(a, b edit) int { return b.from - a.from })
	out := slices.Clone(src)
	for _, e := range edits {
		out = slices.Concat(out[:e.from], []byte(e.text), out[e.to:])
	}
	return string(out)
}

// edit replaces src[from:to] by text.
type edit struct {
	from, to int
	text     string
}

// collectSecrets calls found for every scalar under n that holds a
// secret, with its redacted value.
func collectSecrets(n *yaml.Node, found func(n *yaml.Node, value string)) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if isSecretKey(k.Value) && v.Kind == yaml.ScalarNode && !isReference(v.Value) && v.Value != "" {
				found(v, redacted)
			}
		}
	}
	if n.Kind == yaml.ScalarNode && n.Value != redacted && strings.Contains(n.Value, "@") {
		if r := plans.RedactURL(n.Value); r != n.Value {
			found(n, r)
		}
	}
	for _, c := range n.Content {
		collectSecrets(c, found)
	}
}

// locate finds the text of scalar n in src (a plain or quoted scalar on
// one line) and returns the edit that writes value there, double-quoted.
func locate(src []byte, n *yaml.Node, value string) (edit, bool) {
	lineStart := 0
	for line := 1; line < n.Line; line++ {
		i := bytes.IndexByte(src[lineStart:], '\n')
		if i < 0 {
			return edit{}, false
		}
		lineStart += i + 1
	}
	lineEnd := len(src)
	if i := bytes.IndexByte(src[lineStart:], '\n'); i >= 0 {
		lineEnd = lineStart + i
	}
	line := src[lineStart:lineEnd]
	// Column counts characters from 1.
	from := 0
	for col := 1; col < n.Column; col++ {
		_, size := utf8.DecodeRune(line[from:])
		if size == 0 {
			return edit{}, false
		}
		from += size
	}
	rest := line[from:]
	to := -1
	switch n.Style {
	case 0:
		if bytes.HasPrefix(rest, []byte(n.Value)) {
			to = len(n.Value)
		}
	case yaml.DoubleQuotedStyle:
		for i := 1; i < len(rest); i++ {
			if rest[i] == '\\' {
				i++
			} else if rest[i] == '"' {
				to = i + 1
				break
			}
		}
	case yaml.SingleQuotedStyle:
		for i := 1; i < len(rest); i++ {
			if rest[i] == '\'' {
				if i+1 < len(rest) && rest[i+1] == '\'' {
					i++
					continue
				}
				to = i + 1
				break
			}
		}
	}
	if to < 0 {
		return edit{}, false
	}
	return edit{from: lineStart + from, to: lineStart + from + to, text: strconv.Quote(value)}, true
}

// redactSet is one --set override, its value redacted when it is a
// password or a URL with user information.
func redactSet(s string) string {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return s
	}
	last := k[strings.LastIndexAny(k, ".]")+1:]
	if isSecretKey(last) && !isReference(v) && v != "" {
		return k + "=" + redacted
	}
	if strings.Contains(v, "@") {
		return k + "=" + plans.RedactURL(v)
	}
	return s
}

func isSecretKey(k string) bool { return strings.EqualFold(k, "password") }

// isReference is a value that is one ${VAR} reference and nothing else:
// not a secret itself, the environment holds it. A default
// (${VAR:-value}) may be the secret, so it is no mere reference.
func isReference(v string) bool {
	name, ok := strings.CutPrefix(v, "${")
	if name, ok = strings.CutSuffix(name, "}"); !ok || name == "" {
		return false
	}
	for _, c := range name {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
