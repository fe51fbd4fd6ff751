// Package bytesize is the one reading of a byte size, such as 512B, 1KB
// (1000) or 2GiB (2^30), shared by a plan's payload sizes (package plans)
// and the size literals of its thresholds (package threshold), so that
// the plan and its thresholds cannot read the same text as two different
// sizes.
//
// It owns the units and the arithmetic, done exactly without floating
// point; it knows nothing of plans or thresholds and imports nothing of
// mqplan.
package bytesize

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// units maps a lower-cased unit to its bytes: decimal KB, MB, GB are
// powers of 1000, binary KiB, MiB, GiB powers of 1024, as the IEC and
// SI write them.
var units = map[string]int64{
	"b":  1,
	"kb": 1000, "kib": 1 << 10,
	"mb": 1000 * 1000, "mib": 1 << 20,
	"gb": 1000 * 1000 * 1000, "gib": 1 << 30,
}

// UnitNames is how messages list the units.
const UnitNames = "B, KB, KiB, MB, MiB, GB or GiB"

// IsUnit reports whether s is a size unit (B, KB, KiB, MB, MiB, GB, GiB,
// in any case), so that a lexer can tell a size literal from a number
// that runs into a name.
func IsUnit(s string) bool {
	_, ok := units[strings.ToLower(s)]
	return ok
}

// digitsRE is the whole or the fractional part of a size's number:
// digits, optionally grouped with _, or nothing.
var digitsRE = regexp.MustCompile(`^(?:[0-9]+(?:_[0-9]+)*)?$`)

// ErrNegative is returned by Parse for sizes below zero, so that a caller
// can say "must not be negative" rather than "not a size".
var ErrNegative = errors.New("size must not be negative")

// Parse reads a byte size: "1024", "512B", "1KB" (1000), "1KiB" (1024),
// "1.5MB", with the units B, KB, KiB, MB, MiB, GB and GiB in any case and
// an optional space before the unit. The result must be a whole number of
// bytes; it is computed exactly, without floating point.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "-") {
		return 0, ErrNegative
	}
	t = strings.TrimPrefix(t, "+")
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.' || t[i] == '_') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := units[unit]
	if unit == "" {
		mult, ok = 1, true
	}
	if !ok {
		return 0, fmt.Errorf("size %q has an unknown unit %q: use %s", s, t[i:], UnitNames)
	}
	whole, frac, _ := strings.Cut(num, ".")
	if whole == "" && frac == "" || !digitsRE.MatchString(whole) || !digitsRE.MatchString(frac) {
		return 0, fmt.Errorf("size %q does not start with a number", s)
	}
	// _ separates digits, as in whole numbers (1_048_576).
	whole, frac = strings.ReplaceAll(whole, "_", ""), strings.ReplaceAll(frac, "_", "")
	if len(whole) > 15 || len(frac) > 9 {
		return 0, fmt.Errorf("size %q has too many digits", s)
	}
	w, f, scale := int64(0), int64(0), int64(1)
	if whole != "" {
		w, _ = strconv.ParseInt(whole, 10, 64)
	}
	if frac != "" {
		f, _ = strconv.ParseInt(frac, 10, 64)
		for range len(frac) {
			scale *= 10
		}
	}
	if w > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	// f < 1e9 and mult <= 2^30, so f*mult fits in an int64; and with
	// w <= MaxInt64/mult, w*mult leaves room for less than one more unit.
	if f*mult%scale != 0 {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return w*mult + f*mult/scale, nil
}
