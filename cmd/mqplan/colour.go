package main

import (
	"io"
	"os"
	"regexp"

	"golang.org/x/term"
)

// colour decides whether w gets colour: only a terminal does, never a
// file, a pipe or a CI log, and never when NO_COLOR is set to anything
// (no-color.org) or TERM is "dumb".
func (e *env) colour(w io.Writer) bool {
	if v, ok := e.lookupEnv("NO_COLOR"); ok && v != "" {
		return false
	}
	if v, _ := e.lookupEnv("TERM"); v == "dumb" {
		return false
	}
	if e.isTerminal != nil {
		return e.isTerminal(w)
	}
	return false
}

// isTerminal is the real terminal check of osEnv.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// verdictWord finds the verdict words of a report as whole words: the
// summary line's and the Thresholds table's PASS, FAIL, INCOMPLETE,
// INCONCLUSIVE and NOT JUDGED.
var verdictWord = regexp.MustCompile(`\b(PASS|FAIL|INCOMPLETE|INCONCLUSIVE|NOT JUDGED)\b`)

// ANSI SGR sequences: green, red, yellow (bold) and reset.
const (
	sgrGreen  = "\x1b[1;32m"
	sgrRed    = "\x1b[1;31m"
	sgrYellow = "\x1b[1;33m"
	sgrReset  = "\x1b[0m"
)

// colourVerdicts colours the verdict words of a rendered report. The
// table is laid out first, so the escape codes do not disturb its widths.
func colourVerdicts(text []byte) []byte {
	return verdictWord.ReplaceAllFunc(text, func(w []byte) []byte {
		c := sgrYellow
		switch string(w) {
		case "PASS":
			c = sgrGreen
		case "FAIL":
			c = sgrRed
		}
		return append(append([]byte(c), w...), sgrReset...)
	})
}
