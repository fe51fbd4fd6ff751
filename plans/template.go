package plans

import (
	"fmt"
	"strconv"
	"strings"
)

// Template is a string with %c (client id), %u (username), %i (client
// number) and %% (a literal %) placeholders, parsed once at load time so
// that expanding it per client is cheap and cannot fail.
type Template struct {
	raw   string
	parts []templatePart
}

type templatePart struct {
	lit  string // literal text, when verb is 0
	verb byte   // 'c', 'u' or 'i'
}

// TemplateVars are the values a template expands with.
type TemplateVars struct {
	ClientID string
	Username string
	N        int
}

// ParseTemplate parses s. allowed lists the verbs that may appear (a
// client id cannot refer to itself with %c, for instance); the error names
// the first bad placeholder and its byte offset.
func ParseTemplate(s string, allowed string) (Template, error) {
	t := Template{raw: s}
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch != '%' {
			lit.WriteByte(ch)
			continue
		}
		if i+1 >= len(s) {
			return Template{}, fmt.Errorf("template %q ends with a lone %%; write %%%% for a literal %%", s)
		}
		v := s[i+1]
		i++
		if v == '%' {
			lit.WriteByte('%')
			continue
		}
		if !strings.ContainsRune("cui", rune(v)) {
			return Template{}, fmt.Errorf("template %q: unknown placeholder %%%c at offset %d (known: %%c client id, %%u username, %%i client number, %%%% a literal %%)", s, v, i-1)
		}
		if !strings.ContainsRune(allowed, rune(v)) {
			return Template{}, fmt.Errorf("template %q: placeholder %%%c is not allowed here", s, v)
		}
		if lit.Len() > 0 {
			t.parts = append(t.parts, templatePart{lit: lit.String()})
			lit.Reset()
		}
		t.parts = append(t.parts, templatePart{verb: v})
	}
	if lit.Len() > 0 {
		t.parts = append(t.parts, templatePart{lit: lit.String()})
	}
	return t, nil
}

// MustTemplate parses a template known to be valid (defaults, tests).
func MustTemplate(s string) Template {
	t, err := ParseTemplate(s, "cui")
	if err != nil {
		panic(err)
	}
	return t
}

// String returns the template as written.
func (t Template) String() string { return t.raw }

// IsZero reports whether the template is empty.
func (t Template) IsZero() bool { return t.raw == "" }

// Uses reports whether the template contains the placeholder verb.
func (t Template) Uses(verb byte) bool {
	for _, p := range t.parts {
		if p.verb == verb {
			return true
		}
	}
	return false
}

// Literal returns the literal text with placeholders removed, for checks
// that must hold whatever the values (no wildcard characters in a topic).
func (t Template) Literal() string {
	var b strings.Builder
	for _, p := range t.parts {
		b.WriteString(p.lit)
	}
	return b.String()
}

// MarshalText writes the template as written.
func (t Template) MarshalText() ([]byte, error) { return []byte(t.raw), nil }

// UnmarshalText parses a template as MarshalText wrote it, so that a plan
// echoed in a saved JSON report reads back (mqplan report, compare). Every
// placeholder is allowed: which ones a field may use was checked when the
// plan was loaded.
func (t *Template) UnmarshalText(b []byte) error {
	v, err := ParseTemplate(string(b), "cui")
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Expand fills the placeholders.
func (t Template) Expand(v TemplateVars) string {
	return string(t.AppendExpand(nil, v))
}

// AppendExpand appends the expansion to dst, allocation-free when dst has room.
func (t Template) AppendExpand(dst []byte, v TemplateVars) []byte {
	for _, p := range t.parts {
		switch p.verb {
		case 0:
			dst = append(dst, p.lit...)
		case 'c':
			dst = append(dst, v.ClientID...)
		case 'u':
			dst = append(dst, v.Username...)
		case 'i':
			dst = strconv.AppendInt(dst, int64(v.N), 10)
		}
	}
	return dst
}
