package plans

import (
	"fmt"
	"strings"
)

// expandEnvVars replaces ${VAR} and ${VAR:-default} in s with values from
// lookup; $$ is a literal $. A $ followed by anything else stays as it is,
// so that topics like $share/g/t and $SYS/# need no escaping.
//
// As in the shell, the default is used when VAR is unset or empty, and the
// default may itself contain ${...}. An unset variable without a default is
// an error naming it: a plan must not silently connect with an empty
// password.
func expandEnvVars(s string, lookup func(string) (string, bool)) (string, error) {
	return expandEnvVarsDepth(s, lookup, 0)
}

// maxEnvNesting bounds ${A:-${B:-...}} nesting; real defaults nest once or
// twice, and the bound keeps a hostile value from costing quadratic time.
const maxEnvNesting = 8

func expandEnvVarsDepth(s string, lookup func(string) (string, bool), depth int) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '{':
		default:
			b.WriteByte('$')
			continue
		}
		end := envClosingBrace(s, i+2)
		if end < 0 {
			return "", fmt.Errorf("%q has a ${ without its closing }; write $$ for a literal $", s)
		}
		body := s[i+2 : end]
		name, def, hasDef := strings.Cut(body, ":-")
		if !validEnvName(name) {
			return "", fmt.Errorf("${%s} is not a valid variable reference: write ${NAME} or ${NAME:-default}, NAME being letters, digits and _", body)
		}
		v, ok := lookup(name)
		switch {
		case ok && v != "":
			b.WriteString(v)
		case hasDef:
			if depth >= maxEnvNesting {
				return "", fmt.Errorf("${...} defaults are nested more than %d deep", maxEnvNesting)
			}
			d, err := expandEnvVarsDepth(def, lookup, depth+1)
			if err != nil {
				return "", err
			}
			b.WriteString(d)
		case ok:
			// Set but empty, with no default: the user said empty.
		default:
			return "", &envUnsetError{name: name}
		}
		i = end
	}
	return b.String(), nil
}

// envUnsetError is a ${VAR} whose variable is not set. It names only the
// variable, so it is the one expansion problem a secret's value may show
// (the others quote the value).
type envUnsetError struct{ name string }

func (e *envUnsetError) Error() string {
	return fmt.Sprintf("environment variable %s is not set (write ${%s:-default} to give a default)", e.name, e.name)
}

// envClosingBrace returns the index of the } closing a ${ whose body starts at
// from, counting nested ${...} in defaults; -1 if there is none.
func envClosingBrace(s string, from int) int {
	depth := 0
	for j := from; j < len(s); j++ {
		switch {
		case s[j] == '$' && j+1 < len(s) && s[j+1] == '$':
			j++
		case s[j] == '$' && j+1 < len(s) && s[j+1] == '{':
			depth++
			j++
		case s[j] == '}':
			if depth == 0 {
				return j
			}
			depth--
		}
	}
	return -1
}

// validEnvName reports whether name is a shell variable name.
func validEnvName(name string) bool {
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
