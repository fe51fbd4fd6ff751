package plans

import "strings"

// RedactURL hides the password of every URL in s that carries one:
// mqtt://bob:secret@host becomes mqtt://bob:***@host. s may be a URL, a
// broken one, or any text that holds URLs (a flow list, an error
// message), since plan values are echoed in problems and reports end up in
// CI logs. The user name stays: it tells which credentials were meant.
//
// The authority is taken to end at the first /, ?, #, white space or quote
// after "://" (or where the next URL's scheme begins), and the password to run from the first : to the last @
// before that end, so a password holding @ or : is hidden whole.
func RedactURL(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			break
		}
		start := i + 3
		end := start + strings.IndexFunc(s[start:], func(r rune) bool {
			return strings.ContainsRune("/?#\"' \t\r\n", r)
		})
		if end < start {
			end = len(s)
		}
		if next := strings.Index(s[start:], "://"); next >= 0 {
			// Another URL follows (a list): this authority ends before
			// its scheme.
			k := start + next
			for k > start && isSchemeByte(s[k-1]) {
				k--
			}
			end = min(end, k)
		}
		auth := s[start:end]
		at := strings.LastIndexByte(auth, '@')
		colon := strings.IndexByte(auth, ':')
		b.WriteString(s[:start])
		if at >= 0 && colon >= 0 && colon < at {
			b.WriteString(auth[:colon+1])
			b.WriteString("***")
			b.WriteString(auth[at:])
		} else {
			b.WriteString(auth)
		}
		s = s[end:]
	}
	b.WriteString(s)
	return b.String()
}

// isSchemeByte reports whether c may be part of a URL scheme.
func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}
