package partial

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

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
// URL's user information redacted. Text that is not YAML is kept as it
// is: the run loaded it, so it is YAML, and a test pins that.
func redactSource(src []byte) string {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return string(src)
	}
	if !redactNode(&doc) {
		return string(src)
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return ""
	}
	return string(out)
}

// redactNode redacts secrets under n in place and reports whether it
// changed anything.
func redactNode(n *yaml.Node) bool {
	changed := false
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if isSecretKey(k.Value) && v.Kind == yaml.ScalarNode && !isReference(v.Value) && v.Value != "" {
				v.Value, v.Tag, v.Style = redacted, "!!str", 0
				changed = true
			}
		}
	}
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "@") {
		if r := plans.RedactURL(n.Value); r != n.Value {
			n.Value = r
			changed = true
		}
	}
	for _, c := range n.Content {
		changed = redactNode(c) || changed
	}
	return changed
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

// isReference is a value that is one ${VAR} reference: not a secret
// itself, the environment holds it.
func isReference(v string) bool {
	return strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") && strings.Count(v, "${") == 1
}
