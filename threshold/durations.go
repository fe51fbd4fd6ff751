package threshold

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mqplan/mqplan/internal/bytesize"
)

// Duration and size literals.
//
// expr has no duration or size literals (it reads 10ms and 2GiB as
// malformed numbers), so before parsing, every number+unit token outside
// string literals and comments is rewritten: a duration into a call of
// expr's duration builtin, 10ms → duration("10ms"), a size into its whole
// number of bytes, 2GiB → 2147483648 (read by internal/bytesize, as a
// plan's payload size is), which the checker then types as a size by its
// position. The segments of the rewrite are kept so that a column in the
// rewritten text maps back to the user's text.

const (
	durPrefix = `duration("`
	durSuffix = `")`
)

// durUnits are Go's duration units, longest first so that "ms" wins over
// "m". Both micro signs are accepted, as time.ParseDuration does.
var durUnits = []string{"ns", "us", "µs", "μs", "ms", "s", "m", "h"}

// segment is one rewritten literal: source bytes and runes [srcX, srcXEnd)
// became runes [outRune, outRuneEnd) of the output.
type segment struct {
	srcByte, srcByteEnd int
	srcRune, srcRuneEnd int
	outRune, outRuneEnd int
	// size marks a size literal, rewritten to its bytes (the digits of
	// bytes); sizeErr is why it is not a size (not a whole number of
	// bytes, too large), for Compile to report at its position, the
	// literal then being rewritten to 0.
	size    bool
	bytes   int64
	sizeErr error
	// percent marks a percentage (0.1%), rewritten to its value as a
	// float (0.001); see matchPercent.
	percent bool
}

// prefix is the number of runes the rewrite puts before the literal's
// own text: duration(" for a duration, none for a size.
func (s segment) prefix() int {
	if s.size || s.percent {
		return 0
	}
	return len(durPrefix)
}

// rewrite is the result of rewriting one expression.
type rewrite struct {
	out      string
	srcRunes int // rune count of the source, as expr's lexer counts
	segs     []segment
}

// rewriteDurations rewrites the duration literals of src. It mirrors expr's
// lexer (strings with escapes, raw strings with doubled backticks, //
// and /* */ comments, identifiers, numbers, #pointers, "..", "?.") just
// enough to know where a number starts, so that p99, groups.g1.p99 and
// "10ms" are left alone. Offsets count runes the way expr does: each byte
// of invalid UTF-8 is one rune. It never fails: what it cannot read it
// copies, and expr reports the problem.
func rewriteDurations(src string) rewrite {
	var rw rewrite
	var out strings.Builder
	outRunes := 0
	i, r := 0, 0       // byte and rune offsets in src
	copied, cr := 0, 0 // src copied to out up to this byte / rune
	at := func(b int) (rune, int) {
		if b >= len(src) {
			return -1, 0
		}
		return utf8.DecodeRuneInString(src[b:])
	}
	adv := func() { // one rune forward, never past the end
		if _, w := at(i); w > 0 {
			i += w
			r++
		}
	}
	for i < len(src) {
		c, w := at(i)
		next, _ := at(i + w)
		switch {
		case c == '"' || c == '\'':
			adv()
			for i < len(src) {
				d, _ := at(i)
				if d == c || d == '\n' {
					adv()
					break
				}
				if d == '\\' {
					adv()
				}
				adv()
			}
		case c == '`':
			adv()
			for i < len(src) {
				d, _ := at(i)
				adv()
				if d == '`' {
					if e, _ := at(i); e == '`' {
						adv()
						continue
					}
					break
				}
			}
		case c == '/' && next == '/':
			for i < len(src) {
				d, _ := at(i)
				adv()
				if d == '\n' {
					break
				}
			}
		case c == '/' && next == '*':
			adv()
			adv()
			for i < len(src) {
				d, _ := at(i)
				adv()
				if e, _ := at(i); d == '*' && e == '/' {
					adv()
					break
				}
			}
		case c == '#':
			adv()
			if d, _ := at(i); d == '#' {
				adv()
			}
			skipAlnum(src, &i, &r)
		case c == '?':
			adv()
			if d, _ := at(i); d == '.' || d == '?' {
				adv()
			}
		case c == '.' && next == '.':
			adv()
			adv()
		case c >= '0' && c <= '9' || c == '.' && next >= '0' && next <= '9':
			endB, endR, ok := matchDuration(src, i, r)
			isSize, isPercent := false, false
			if !ok {
				endB, ok = matchSize(src, i)
				// 2GiB% is no percentage, and its bytes would read as
				// one (2147483648%): left alone, for expr to refuse.
				ok = ok && !percentAt(src, endB)
				endR, isSize = r+(endB-i), ok // a size is ASCII
			}
			if !ok {
				endB, ok = matchPercent(src, i)
				endR, isPercent = r+(endB-i), ok // so is a percentage
			}
			if !ok {
				skipNumber(src, &i, &r)
				break
			}
			out.WriteString(src[copied:i])
			outRunes += r - cr
			seg := segment{srcByte: i, srcByteEnd: endB, srcRune: r, srcRuneEnd: endR, outRune: outRunes}
			if isPercent {
				seg.percent = true
				v := shiftPercent(src[i : endB-1])
				out.WriteString(v)
				outRunes += len(v)
			} else if isSize {
				seg.size = true
				seg.bytes, seg.sizeErr = bytesize.Parse(src[i:endB])
				if seg.sizeErr != nil {
					seg.bytes = 0
				}
				digits := strconv.FormatInt(seg.bytes, 10)
				out.WriteString(digits)
				outRunes += len(digits)
			} else {
				out.WriteString(durPrefix)
				out.WriteString(src[i:endB])
				out.WriteString(durSuffix)
				outRunes += len(durPrefix) + (endR - r) + len(durSuffix)
			}
			seg.outRuneEnd = outRunes
			rw.segs = append(rw.segs, seg)
			i, r = endB, endR
			copied, cr = i, r
		case c != utf8.RuneError && isAlnum(c):
			skipAlnum(src, &i, &r)
		default:
			adv()
		}
	}
	out.WriteString(src[copied:])
	rw.out = out.String()
	rw.srcRunes = r
	return rw
}

// matchDuration matches (number unit)+ at byte i (rune r), where a number
// is digits with an optional fraction, or a bare fraction (.5), and the
// literal must not run on into an identifier character (10msx is not a
// duration). It returns the end offsets.
func matchDuration(src string, i, r int) (endB, endR int, ok bool) {
	digits := func() int {
		n := 0
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
			r++
			n++
		}
		return n
	}
	for {
		n := digits()
		if i+1 < len(src) && src[i] == '.' && src[i+1] >= '0' && src[i+1] <= '9' {
			i++
			r++
			n += digits()
		}
		if n == 0 {
			return 0, 0, false
		}
		unit := ""
		for _, u := range durUnits {
			if strings.HasPrefix(src[i:], u) {
				unit = u
				break
			}
		}
		if unit == "" {
			return 0, 0, false
		}
		i += len(unit)
		r += utf8.RuneCountInString(unit)
		if i < len(src) && src[i] >= '0' && src[i] <= '9' ||
			i+1 < len(src) && src[i] == '.' && src[i+1] >= '0' && src[i+1] <= '9' {
			continue // 1m30s, 1h0.5m, 1s.5s
		}
		if d, _ := utf8.DecodeRuneInString(src[i:]); i < len(src) && d != utf8.RuneError && isAlnum(d) {
			return 0, 0, false
		}
		return i, r, true
	}
}

// matchSize matches a size literal at byte i: digits (grouped with _ as
// expr groups them, 1_000KB), an optional fraction (1.5GiB, .5KiB), then a
// size unit of internal/bytesize in any case (B, KB, KiB, MB, MiB, GB, GiB)
// that does not run on into an identifier character (2GiBx is not a size).
// Whether the number is a whole number of bytes is bytesize.Parse's to
// say. Tried after matchDuration, so 1m and 1ms stay durations.
func matchSize(src string, i int) (endB int, ok bool) {
	digits := func() int {
		n := 0
		for i < len(src) && (src[i] >= '0' && src[i] <= '9' || src[i] == '_' && n > 0 && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9') {
			i++
			n++
		}
		return n
	}
	n := digits()
	if i+1 < len(src) && src[i] == '.' && src[i+1] >= '0' && src[i+1] <= '9' {
		i++
		n += digits()
	}
	if n == 0 {
		return 0, false
	}
	u := i
	for u < len(src) && (src[u] >= 'a' && src[u] <= 'z' || src[u] >= 'A' && src[u] <= 'Z') {
		u++
	}
	if !bytesize.IsUnit(src[i:u]) {
		return 0, false
	}
	if d, _ := utf8.DecodeRuneInString(src[u:]); u < len(src) && d != utf8.RuneError && isAlnum(d) {
		return 0, false
	}
	return u, true
}

// skipNumber skips a number that is not a duration the way expr's lexer
// reads it (0x1F, 1_000, 1.5e3), then any identifier characters stuck to it
// (1e3s), which expr rejects as a bad number anyway.
func skipNumber(src string, i, r *int) {
	if src[*i] == '.' {
		*i++
		*r++
	}
	for *i < len(src) {
		c := src[*i]
		switch {
		case c >= '0' && c <= '9' || c == '_':
		case c == '.' && *i+1 < len(src) && src[*i+1] >= '0' && src[*i+1] <= '9':
		case c == 'e' || c == 'E':
			if *i+1 < len(src) && (src[*i+1] == '+' || src[*i+1] == '-') {
				*i++
				*r++
			}
		default:
			d, _ := utf8.DecodeRuneInString(src[*i:])
			if d == utf8.RuneError || !isAlnum(d) {
				return
			}
			skipAlnum(src, i, r)
			return
		}
		*i++
		*r++
	}
}

// skipAlnum skips identifier characters (expr's IsAlphaNumeric).
func skipAlnum(src string, i, r *int) {
	for *i < len(src) {
		d, w := utf8.DecodeRuneInString(src[*i:])
		if d == utf8.RuneError || !isAlnum(d) {
			return
		}
		*i += w
		*r++
	}
}

// isAlnum is expr's identifier character class.
func isAlnum(c rune) bool {
	return c == '_' || c == '$' || unicode.IsLetter(c) || unicode.IsDigit(c)
}

// isUnit reports whether s is a duration unit, for the "10 ms" hint.
func isUnit(s string) bool {
	for _, u := range durUnits {
		if s == u {
			return true
		}
	}
	return false
}

// srcOffset maps a rune offset in the rewritten text back to the user's
// text. An offset inside a rewritten literal maps into the literal (the
// duration(" prefix to its first rune, the ") suffix to its last); the
// result is always within [0, srcRunes], srcRunes being where "unexpected
// end of expression" points.
func (rw *rewrite) srcOffset(out int) int {
	delta := 0
	for _, s := range rw.segs {
		if out < s.outRune {
			break
		}
		if out < s.outRuneEnd {
			k := out - s.outRune - s.prefix()
			switch {
			case k < 0:
				return s.srcRune
			case k >= s.srcRuneEnd-s.srcRune:
				return s.srcRuneEnd - 1
			}
			return s.srcRune + k
		}
		delta = s.srcRuneEnd - s.outRuneEnd
	}
	return min(max(out+delta, 0), rw.srcRunes)
}
