package report

import (
	"bytes"
	"io"
	"strings"

	"github.com/clipperhouse/displaywidth"
)

// align is a column's alignment.
type align uint8

const (
	alignRight align = iota
	alignLeft
)

// asciiTable is the report's one table style: plain ASCII borders, one
// space of padding, headers exactly as written, no colour, no wrapping.
//
//	+-------+------+
//	| group | sent |
//	+-------+------+
//	| pub   | 8000 |
//	+-------+------+
//
// It replaces tablewriter, whose terminal detection (go-isatty) pulled
// golang.org/x/sys into every reader of the report, and whose widths
// followed the locale (ambiguous-width runes such as µ counted 2 columns
// under a CJK LANG). Cell text is laid out as tablewriter laid it out, so
// the golden tables did not change: each line of a cell is trimmed, a tab
// takes four columns, a newline starts another line of the row, a short
// row is padded with empty cells, and widths are display widths (a CJK
// rune takes two columns); a table without rows is its header alone.
type asciiTable struct {
	w      io.Writer
	header []string
	aligns []align
	rows   [][]string
}

// tabWidth is how many columns a tab in a cell takes.
const tabWidth = 4

// newTable makes a table whose first column is a name, left-aligned; the
// others hold numbers, right-aligned so that digits line up.
func newTable(w io.Writer, header ...string) *asciiTable {
	return newTableAligned(w, []align{alignLeft}, header...)
}

// newTableAligned makes a table whose first columns take the given
// alignments; the rest are right-aligned.
func newTableAligned(w io.Writer, aligns []align, header ...string) *asciiTable {
	full := make([]align, len(header))
	copy(full, aligns)
	return &asciiTable{w: w, header: header, aligns: full}
}

// render lays out the header and rows and writes the table in one write.
func render(t *asciiTable, rows [][]string) error {
	t.rows = rows
	cols := len(t.header)
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	header := cellLines(t.header, cols)
	body := make([][][]string, len(rows))
	widths := make([]int, cols)
	measure := func(cells [][]string) {
		for c, lines := range cells {
			for _, l := range lines {
				widths[c] = max(widths[c], displaywidth.String(l))
			}
		}
	}
	measure(header)
	for i, r := range rows {
		body[i] = cellLines(r, cols)
		measure(body[i])
	}
	var b bytes.Buffer
	border := func() {
		b.WriteByte('+')
		for _, w := range widths {
			b.WriteString(strings.Repeat("-", w+2))
			b.WriteByte('+')
		}
		b.WriteByte('\n')
	}
	row := func(cells [][]string) {
		height := 1
		for _, lines := range cells {
			height = max(height, len(lines))
		}
		for l := 0; l < height; l++ {
			b.WriteByte('|')
			for c, lines := range cells {
				text := ""
				if l < len(lines) {
					text = lines[l]
				}
				pad := strings.Repeat(" ", widths[c]-displaywidth.String(text))
				b.WriteByte(' ')
				if c < len(t.aligns) && t.aligns[c] == alignLeft {
					b.WriteString(text + pad)
				} else {
					b.WriteString(pad + text)
				}
				b.WriteString(" |")
			}
			b.WriteByte('\n')
		}
	}
	border()
	row(header)
	border()
	if len(body) > 0 {
		for _, cells := range body {
			row(cells)
		}
		border()
	}
	_, err := t.w.Write(b.Bytes())
	return err
}

// cellLines splits each of cols cells (missing ones empty) into its
// lines: the cell trimmed, tabs expanded, blank lines dropped, control
// characters escaped (TerminalSafe). Inner
// lines keep their own leading and trailing spaces, as tablewriter kept
// them.
func cellLines(cells []string, cols int) [][]string {
	out := make([][]string, cols)
	for c := range out {
		text := ""
		if c < len(cells) {
			text = cells[c]
		}
		text = strings.TrimSpace(strings.ReplaceAll(text, "\t", strings.Repeat(" ", tabWidth)))
		for _, l := range strings.Split(text, "\n") {
			if strings.TrimSpace(l) != "" || len(out[c]) == 0 && text == "" {
				// Escaped before measuring, so that the widths are
				// those the terminal shows.
				out[c] = append(out[c], TerminalSafe(l, ""))
			}
		}
	}
	return out
}
