package threshold

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mqplan/mqplan/internal/suggest"
	"github.com/mqplan/mqplan/metric"
)

// suggestName returns the candidate a misspelt name most likely meant, or
// "" when none is close enough to be a likely typo. Ties go to the longer
// common prefix, then to the nearer trailing number, so that p98 suggests
// p99 rather than p90.
func suggestName(s string, cands []string) string {
	return suggest.Closest(s, cands, suggest.Limit(s, 3), suggest.Similar)
}

// allNames is every name a scope accepts: canonical names, then aliases.
var allNames = func() []string {
	var names []string
	for _, md := range metric.All() {
		names = append(names, string(md.Name))
	}
	return append(names, metric.Aliases()...)
}()

// topList is the short list of a scope's names for "unknown metric"
// messages: leaves and aliases, with families folded into latency.* etc.
var topList = func() string {
	var parts []string
	seen := map[string]bool{}
	for _, md := range metric.All() {
		fam, _, ok := md.Name.Split()
		switch {
		case !ok:
			parts = append(parts, string(md.Name))
		case !seen[fam]:
			seen[fam] = true
			parts = append(parts, fam+".*")
		}
	}
	aliases := metric.Aliases()
	sort.Slice(aliases, func(i, j int) bool {
		return len(aliases[i]) < len(aliases[j]) || len(aliases[i]) == len(aliases[j]) && aliases[i] < aliases[j]
	})
	return strings.Join(append(parts, aliases...), ", ")
}()

// unknownName is the message for a group or phase name not in the plan:
// the closest name when one is close, else the whole list.
func unknownName(kind, name string, known []string) string {
	if s := suggestName(name, known); s != "" {
		return fmt.Sprintf("unknown %s %q; did you mean %q?", kind, name, s)
	}
	if len(known) == 0 {
		return fmt.Sprintf("unknown %s %q (the plan has no %ss)", kind, name, kind)
	}
	shown := make([]string, len(known))
	for i, k := range known {
		shown[i] = displayName(k)
	}
	return fmt.Sprintf("unknown %s %q (%ss: %s)", kind, name, kind, strings.Join(shown, ", "))
}

// displayName prints a name bare when it is an identifier, else quoted,
// so a list of names stays readable and on one line.
func displayName(s string) string {
	if isIdent(s) {
		return s
	}
	return strconv.Quote(s)
}

// memberSyntax is how a threshold reaches a name: .sub or ["my-group"].
func memberSyntax(name string) string {
	if isIdent(name) {
		return "." + name
	}
	return "[" + strconv.Quote(name) + "]"
}

// isIdent reports whether expr accepts s after a dot (its lexer's
// identifier rule: a letter, _ or $, then letters, digits, _ or $).
func isIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || r == '$' || unicode.IsLetter(r) || i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return s != "" && utf8.ValidString(s)
}
