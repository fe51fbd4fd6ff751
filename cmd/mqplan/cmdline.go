package main

import (
	"strings"

	"github.com/mqplan/mqplan/plans"
)

// secretFlags are the flags whose value is a secret: emqtt-bench's
// -P/--password (mqplan's own commands take passwords from a file or the
// environment, never as a value).
var secretFlags = map[string]bool{"-P": true, "--password": true, "-password": true}

// masked is how a secret shows in a command line, as plans.Secret shows.
const masked = "******"

// commandLine is the command line that made a run, for its result: "mqplan",
// the command and its arguments, shell-quoted where needed, with every
// secret masked at the source: a password flag's value, a --set of a key
// naming a password, a secret or a token, and the password in a URL
// (plans.RedactURL). Results are archived by CI and mailed; the command
// line must be safe to show wherever they go.
func commandLine(cmd string, args []string) string {
	out := []string{"mqplan", cmd}
	hide := false
	for _, a := range args {
		switch {
		case hide:
			a, hide = masked, false
		case secretFlags[a]:
			hide = true
		default:
			a = maskArg(a)
		}
		out = append(out, shellQuote(a))
	}
	return strings.Join(out, " ")
}

// maskArg masks the secret in one argument: --password=X, -PX, a --set
// value of a secret key (KEY=VALUE, the flag itself before it), or a URL's
// password.
func maskArg(a string) string {
	if name, _, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") && secretFlags[name] {
		return name + "=" + masked
	}
	if strings.HasPrefix(a, "-P") && len(a) > 2 && !strings.HasPrefix(a, "--") {
		return "-P" + masked
	}
	if key, _, ok := strings.Cut(a, "="); ok && !strings.Contains(key, "://") {
		low := strings.ToLower(key)
		for _, w := range []string{"password", "secret", "token"} {
			if strings.Contains(low, w) {
				return key + "=" + masked
			}
		}
	}
	return plans.RedactURL(a)
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain
// characters, so that the command line can be pasted back.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@%+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
