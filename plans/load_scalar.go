package plans

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/mqplan/mqplan/internal/bytesize"
)

// planDecimalRE is a plain decimal number: no hex, no Inf or NaN, which
// strconv.ParseFloat would accept but no one writes in a plan on purpose.
var planDecimalRE = regexp.MustCompile(`^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$`)

// planRateUnits maps the unit after the / of a rate to its length in seconds.
var planRateUnits = map[string]float64{
	"us": 1e-6, "µs": 1e-6,
	"ms": 1e-3,
	"s":  1, "sec": 1,
	"m": 60, "min": 60,
	"h": 3600,
}

// maxPlanRate bounds every rate in a plan (messages or connections per
// second). It is far beyond what one machine can do, and keeps intervals
// computed from rates well inside time.Duration.
const maxPlanRate = 1e9

// ParseRate parses a rate into events per second: "500/s", "60/min",
// "3600/h", "2/ms", "250/us", or a plain number meaning per second.
// Decimals are allowed ("0.5/s"); units are case-sensitive as in Go
// durations ("m" and "min" are minutes). The result is finite but may be
// zero or negative: bounds are the caller's.
func ParseRate(s string) (float64, error) {
	num, unit, hasUnit := strings.Cut(strings.TrimSpace(s), "/")
	num = strings.TrimSpace(num)
	if !planDecimalRE.MatchString(num) {
		return 0, fmt.Errorf("rate %q does not start with a number", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("rate %q is out of range", s)
	}
	if !hasUnit {
		return v, nil
	}
	per, ok := planRateUnits[strings.TrimSpace(unit)]
	if !ok {
		return 0, fmt.Errorf("rate %q has an unknown unit %q: use /us, /ms, /s, /min or /h", s, strings.TrimSpace(unit))
	}
	return v / per, nil
}

// errNegativeSize is returned by ParseSize for sizes below zero.
var errNegativeSize = bytesize.ErrNegative

// ParseSize parses a byte size: "1024", "512B", "1KB" (1000), "1KiB"
// (1024), "1.5MB", with the units B, KB, KiB, MB, MiB, GB and GiB in any
// case and an optional space before the unit. The result must be a whole
// number of bytes; it is computed exactly, without floating point. It is
// internal/bytesize's reading, the one a threshold's size literal
// (broker.rss.max < 2GiB) gets too.
func ParseSize(s string) (int64, error) { return bytesize.Parse(s) }

// planIntRE is a whole number, with optional _ between digits (1_000_000).
var planIntRE = regexp.MustCompile(`^[+-]?[0-9]+(?:_[0-9]+)*$`)

// parsePlanInt parses a whole number as written in a plan.
func parsePlanInt(s string) (int, error) {
	s = strings.TrimSpace(s)
	if !planIntRE.MatchString(s) {
		return 0, errors.New("not a whole number")
	}
	return strconv.Atoi(strings.ReplaceAll(s, "_", ""))
}

// parsePlanBool accepts the YAML 1.2 booleans. yes/no/on/off are refused
// rather than guessed at: YAML 1.1 read them as booleans, 1.2 as strings.
func parsePlanBool(s string) (bool, bool) {
	switch strings.TrimSpace(s) {
	case "true", "True", "TRUE":
		return true, true
	case "false", "False", "FALSE":
		return false, true
	}
	return false, false
}

// gotValue shows a value found in a plan: numbers as they are, anything
// else quoted, so that "got 3" and `got "abc"` read naturally.
func gotValue(s string) string {
	if t := strings.TrimSpace(s); t != "" && planDecimalRE.MatchString(t) {
		return t
	}
	return quoteValue(s)
}

// formatByteSize writes a byte count the way a plan would, for messages.
func formatByteSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "GiB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "KiB"
	}
	return strconv.FormatInt(n, 10) + "B"
}
