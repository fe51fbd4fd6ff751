package plans

import (
	"regexp"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// The keys users of neighbouring tools write first, answered with the key
// meant here: emqtt-bench's -I interval is a publish's every, its -c
// clients a group's count, and a group's stages live under its publish.
// An edit distance cannot find these (interval is nowhere near every), so
// they are listed, by section.

// keyHabit is one foreign key of a section: the key it stands for (which
// a "missing" problem of that key is then reported after) and the words
// of the answer.
type keyHabit struct {
	meant string
	hint  string
}

// keyHabits are the foreign keys of each section, by the section's path
// with its list indexes removed (groups[0].publish → groups.publish).
var keyHabits = map[string]map[string]keyHabit{
	"groups": {
		"clients":  {meant: "count", hint: `did you mean "count"? a group's clients are its count, e.g. count: 100`},
		"stages":   {meant: "publish", hint: "a group's own stages go under its publish: publish.stages (a list of {duration, rate}); stages: at the top of the plan gives every publishing group the same profile"},
		"interval": {meant: "publish", hint: `a group publishes at publish.every (one client's interval, e.g. every: 5s) or publish.rate (the whole group's, e.g. rate: 500/s)`},
		"topic":    {meant: "subscribe", hint: "a topic goes under subscribe: or publish:, e.g. publish: {topic: \"t/%i\", every: 1s}"},
	},
	"groups.publish": {
		"interval":     {meant: "every", hint: `did you mean "every"? emqtt-bench's -I/--interval is every here: one client's interval, e.g. every: 5s (or rate: 500/s for the whole group)`},
		"payload_size": {meant: "size", hint: `did you mean "size"? the payload's size in bytes, e.g. size: 1KB`},
		"clients":      {meant: "", hint: "clients are the group's count, beside publish:, not under it"},
	},
}

// indexRE matches the list indexes of a section's path.
var indexRE = regexp.MustCompile(`\[\d+\]`)

// habitOf returns the answer to key in the section at path, if key is a
// habit of another tool there.
func habitOf(path, key string) (keyHabit, bool) {
	h, ok := keyHabits[indexRE.ReplaceAllString(path, "")][key]
	return h, ok
}

// missingAt is where to report that none of keys is in the section: at
// an unknown key that meant one of them (interval for every), so that the
// problem reads after the unknown key's, which explains it; else at def.
func (s *keySection) missingAt(def *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		if n, ok := s.meant[k]; ok {
			return n
		}
	}
	return def
}

// payloadHint is the hint for a YAML syntax error at line (1-based) and
// col that lies in a publish's payload: an unquoted JSON template ({"id":
// "%i"}) is YAML flow syntax, and % cannot start a token. The hint quotes
// the template as written when it is on the error's line. "" when the
// error is not in a payload.
func payloadHint(data []byte, line, col int) string {
	lines := strings.Split(string(data), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	// Look up from the error's line for the key whose value holds it; a
	// flow mapping may span lines, so a few lines up are searched, up to
	// the first other key.
	for j := line - 1; j >= 0 && j >= line-20; j-- {
		text := lines[j]
		i := strings.Index(text, "payload:")
		if i >= 0 && (j < line-1 || i < col) {
			value := strings.TrimSpace(text[i+len("payload:"):])
			if j == line-1 && value != "" && !strings.ContainsAny(value[:1], `'"|>`) {
				return "; quote the payload template: payload: '" + strings.ReplaceAll(value, "'", "''") + "'"
			}
			return "; quote the payload template ('...' around it, or a >- block)"
		}
		if j < line-1 && keyLineRE.MatchString(text) {
			return ""
		}
	}
	return ""
}

// keyLineRE matches a line that starts a key: (- )key:
var keyLineRE = regexp.MustCompile(`^\s*(-\s+)?[A-Za-z_][A-Za-z0-9_-]*:`)

// PlanKeys lists the keys of a plan's top level, in the order the docs
// list them, for the command line's hints (--duration 10s is --set
// duration=10s).
func PlanKeys() []string { return slices.Clone(planKeys) }
