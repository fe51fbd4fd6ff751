package report

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// TerminalSafe is s with every control character but those in keep
// ("\n", "\n\t" or "") shown escaped instead of written: C0, DEL and C1 as \x1b,
// \x7f or \u009b, a byte that is not UTF-8 as \xff. Text that reaches a
// terminal or a CI log from outside mqplan (a hand-edited saved result,
// a broker's error reason or $SYS text, a file name given on the command
// line) could otherwise carry escape sequences that act there (retitle
// the window, recolour or rewrite lines) instead of showing; escaped, the
// reader sees what was there. The terminal table and the process's error
// lines pass through it; text without control characters is returned as
// it is.
func TerminalSafe(s, keep string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return unsafeRune(r, keep) })
	if i < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case unsafeRune(r, keep) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r, keep):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	return b.String()
}

// unsafeRune says r is a C0 or C1 control character or DEL not in keep.
func unsafeRune(r rune, keep string) bool {
	return (r < 0x20 || r >= 0x7f && r <= 0x9f) && !strings.ContainsRune(keep, r)
}

// hasControl says s holds a control character other than those in
// allowed, or is not UTF-8: what ReadJSON refuses in a saved result's
// strings that mqplan never writes with one (a plan's name, a group's,
// a metric's).
func hasControl(s, allowed string) bool {
	return !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool {
		return unsafeRune(r, allowed)
	})
}
