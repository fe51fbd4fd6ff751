package report

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/plans"
)

// absent is what the table shows for a metric with no samples: never a 0,
// which would read as a measurement.
const absent = "-"

// fmtDuration formats d for people, with three significant digits in the
// largest unit that keeps the number at least 1: 850µs, 1.23ms, 12.3ms,
// 2.1s. time.Duration.String would print 1.234567ms, noise at the
// histograms' three-digit precision.
func fmtDuration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d == 0:
		s = "0s"
	case d < time.Microsecond:
		s = strconv.FormatInt(int64(d), 10) + "ns"
	case d < time.Millisecond:
		s = sig3(float64(d)/float64(time.Microsecond)) + "µs"
	case d < time.Second:
		s = sig3(float64(d)/float64(time.Millisecond)) + "ms"
	case d < time.Minute:
		s = sig3(d.Seconds()) + "s"
	default:
		s = d.Round(time.Second).String()
	}
	if neg {
		return "-" + s
	}
	return s
}

// sig3 formats a positive x with three significant digits and no trailing
// zeros: 1.234 → 1.23, 12.34 → 12.3, 123.4 → 123, 2.10 → 2.1.
func sig3(x float64) string {
	if x == 0 {
		return "0"
	}
	decimals := 2 - int(math.Floor(math.Log10(math.Abs(x))))
	if decimals < 0 {
		decimals = 0
	}
	s := strconv.FormatFloat(x, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// fmtPercent formats a fraction as a percentage with three significant
// digits. A non-zero fraction never rounds to "0%": one lost message in a
// million shows as 0.0001%, because a loss that looks like none is worse
// than a long number.
func fmtPercent(f float64) string {
	if f == 0 {
		return "0%"
	}
	return sig3(f*100) + "%"
}

// fmtRate formats a per-second rate: whole numbers from 100 up, then one or
// two decimals, so small per-client rates (0.5/s) stay readable.
func fmtRate(f float64) string {
	switch a := math.Abs(f); {
	case f == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(f, 'f', 1, 64)
	default:
		return strconv.FormatFloat(f, 'f', 2, 64)
	}
}

// fmtValue formats a metric value as a threshold would read it: durations
// like 1.2ms, fractions and rates as plain numbers (loss_rate=0.001, the
// unit the expression uses), counts as integers.
func fmtValue(v any) string {
	switch x := v.(type) {
	case nil:
		return absent
	case time.Duration:
		return fmtDuration(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return fmtFloat(x)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	default:
		return absent
	}
}

// fmtFloat shows a rate or fraction with four significant digits but
// without an exponent for ordinary magnitudes: 0.001, 0.0123, 190.5, 12346.
func fmtFloat(x float64) string {
	a := math.Abs(x)
	switch {
	case x == math.Trunc(x) && a < 1e15:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case a >= 1000:
		return strconv.FormatFloat(x, 'f', 0, 64)
	default:
		return strconv.FormatFloat(x, 'g', 4, 64)
	}
}

// redactURL hides the password of a URL's user information
// (mqtt://user:secret@host becomes mqtt://user:***@host): a broker
// address may carry credentials, and reports end up in CI logs.
func redactURL(s string) string { return plans.RedactURL(s) }
