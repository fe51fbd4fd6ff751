package plans

import (
	"net/url"
	"strings"
)

// RedactURL hides the credentials of every URL in s that carries some:
// mqtt://bob:secret@host becomes mqtt://bob:***@host. s may be a URL, a
// broken one, or any text that holds URLs (a flow list, an error
// message), since plan values are echoed in problems and reports end up in
// CI logs. The user name stays when a password follows it: it tells which
// credentials were meant. A user name alone is hidden (mqtt://***@host),
// because services such as ThingsBoard take an access token as the user
// name; so are the values of a query (ws://host/mqtt?access_token=***),
// where WebSocket gateways take tokens; and so is what follows the scheme
// of a URL written without // (mqtt:bob:secret@host becomes
// mqtt:***@host), which url.Parse reads as opaque.
//
// The authority is taken to end at the first /, ?, #, white space or quote
// after "://" (or where the next URL's scheme begins), and the password to run from the first : to the last @
// before that end, so a password holding @ or : is hidden whole.
func RedactURL(s string) string {
	if !strings.Contains(s, "@") && !strings.Contains(s, "?") {
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
		switch {
		case at >= 0 && colon >= 0 && colon < at:
			b.WriteString(auth[:colon+1])
			b.WriteString("***")
			b.WriteString(auth[at:])
		case at >= 0:
			b.WriteString("***")
			b.WriteString(auth[at:])
		default:
			b.WriteString(auth)
		}
		s = s[end:]
		// The rest of this URL: its path, and a query whose values are hidden.
		rest := strings.IndexFunc(s, func(r rune) bool { return strings.ContainsRune("\"' \t\r\n", r) })
		if rest < 0 {
			rest = len(s)
		}
		if next := strings.Index(s[:rest], "://"); next >= 0 {
			k := next
			for k > 0 && isSchemeByte(s[k-1]) {
				k--
			}
			rest = k
		}
		b.WriteString(redactQuery(s[:rest]))
		s = s[rest:]
	}
	b.WriteString(redactOpaque(s))
	return b.String()
}

// RedactEndpoint is RedactURL for an endpoint whose user name is a
// secret too (a Prometheus endpoint behind basic authentication): the
// whole of the URL's user information is hidden, http://***@host/metrics.
// s is one URL, maybe a broken one (see redactBroken).
func RedactEndpoint(s string) string {
	s = RedactURL(redactBroken(s))
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	start := i + 3
	end := start + strings.IndexAny(s[start:], "/?#")
	if end < start {
		end = len(s)
	}
	if at := strings.LastIndexByte(s[start:end], '@'); at >= 0 {
		s = s[:start] + "***" + s[start+at:]
	}
	return s
}

// redactBroken hides the user information of a value meant as one URL
// that does not parse: url.Parse ends the authority at the first /, ? or
// #, so a password holding one of those (or a space) breaks the URL, and
// RedactURL, which reads the authority the same way, would show the
// password's head and tail. Everything between "://" and the last @ of
// the value is hidden instead.
func redactBroken(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	start := i + 3
	at := strings.LastIndexByte(s[start:], '@')
	if at < 0 {
		return s
	}
	if _, err := url.Parse(strings.TrimSpace(s)); err == nil {
		return s
	}
	return s[:start] + "***" + s[start+at:]
}

// redactQuery hides the values of the query in a URL's path part:
// /mqtt?access_token=abc&x=1#f becomes /mqtt?access_token=***&x=***#f.
func redactQuery(p string) string {
	q := strings.IndexByte(p, '?')
	if q < 0 {
		return p
	}
	query, frag := p[q+1:], ""
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query, frag = query[:h], query[h:]
	}
	params := strings.Split(query, "&")
	for i, kv := range params {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" {
			params[i] = k + "=***"
		}
	}
	return p[:q+1] + strings.Join(params, "&") + frag
}

// redactOpaque hides the credentials of URLs written without //
// (mqtt:bob:secret@host): in every word of s that starts with a scheme
// and holds an @, what lies between the scheme and the last @.
func redactOpaque(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		w := strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune("\"' \t\r\n[],", r) })
		if w < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:w])
		s = s[w:]
		end := strings.IndexFunc(s, func(r rune) bool { return strings.ContainsRune("\"' \t\r\n[],", r) })
		if end < 0 {
			end = len(s)
		}
		word := s[:end]
		s = s[end:]
		colon, at := strings.IndexByte(word, ':'), strings.LastIndexByte(word, '@')
		if colon > 0 && at > colon && isScheme(word[:colon]) && !strings.HasPrefix(word[colon:], "://") {
			word = word[:colon+1] + "***" + word[at:]
		}
		b.WriteString(word)
	}
	return b.String()
}

// isScheme reports whether s is a URL scheme: a letter, then letters,
// digits, +, - or .
func isScheme(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isSchemeByte(s[i]) {
			return false
		}
	}
	return true
}

// isSchemeByte reports whether c may be part of a URL scheme.
func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}
