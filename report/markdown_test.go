package report

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/golden"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

// timeline makes n seconds of steady traffic: second i (from 1) sends
// 100*i messages, receives one fewer, and has a p99 of i ms.
func timeline(n int) []stats.Second {
	tl := make([]stats.Second, n)
	for i := range tl {
		s := i + 1
		tl[i] = stats.Second{At: time.Duration(s) * time.Second, Phase: phase.Steady,
			Sent: int64(100 * s), Received: int64(100*s - 1), P99: time.Duration(s) * time.Millisecond}
	}
	return tl
}

func TestChartPoints(t *testing.T) {
	partial := timeline(3)
	// The last second is cut short: 150 messages in 0.5 s is 300/s.
	partial[2].At = 2500 * time.Millisecond
	partial[2].Sent, partial[2].Received = 150, 150
	quiet := timeline(2)
	quiet[1].Received, quiet[1].P99 = 0, 0

	tests := []struct {
		name   string
		tl     []stats.Second
		points int
		first  chartPoint
		last   chartPoint
	}{
		{name: "one second", tl: timeline(1), points: 1,
			first: chartPoint{at: time.Second, seconds: 1, sendRate: 100, recvRate: 99, p99ms: 1},
			last:  chartPoint{at: time.Second, seconds: 1, sendRate: 100, recvRate: 99, p99ms: 1}},
		{name: "sixty seconds are kept", tl: timeline(60), points: 60,
			first: chartPoint{at: time.Second, seconds: 1, sendRate: 100, recvRate: 99, p99ms: 1},
			last:  chartPoint{at: 60 * time.Second, seconds: 1, sendRate: 6000, recvRate: 5999, p99ms: 60}},
		// 61 s: buckets of 2 s, the last one a single second.
		{name: "sixty-one seconds in buckets of two", tl: timeline(61), points: 31,
			first: chartPoint{at: 2 * time.Second, seconds: 2, sendRate: 150, recvRate: 149, p99ms: 2},
			last:  chartPoint{at: 61 * time.Second, seconds: 1, sendRate: 6100, recvRate: 6099, p99ms: 61}},
		// An hour: buckets of 60 s; rates are averages, p99 the worst.
		{name: "an hour in minutes", tl: timeline(3600), points: 60,
			first: chartPoint{at: 60 * time.Second, seconds: 60, sendRate: 3050, recvRate: 3049, p99ms: 60},
			last:  chartPoint{at: 3600 * time.Second, seconds: 60, sendRate: 357050, recvRate: 357049, p99ms: 3600}},
		{name: "a short last second", tl: partial, points: 3,
			first: chartPoint{at: time.Second, seconds: 1, sendRate: 100, recvRate: 99, p99ms: 1},
			last:  chartPoint{at: 2500 * time.Millisecond, seconds: 1, sendRate: 300, recvRate: 300, p99ms: 3}},
		{name: "a second without deliveries", tl: quiet, points: 2,
			first: chartPoint{at: time.Second, seconds: 1, sendRate: 100, recvRate: 99, p99ms: 1},
			last:  chartPoint{at: 2 * time.Second, seconds: 1, sendRate: 200, recvRate: 0, p99ms: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pts := chartPoints(tt.tl, mdChartPoints)
			if len(pts) != tt.points {
				t.Fatalf("%d points, want %d", len(pts), tt.points)
			}
			if pts[0] != tt.first || pts[len(pts)-1] != tt.last {
				t.Errorf("first %+v last %+v, want %+v and %+v", pts[0], pts[len(pts)-1], tt.first, tt.last)
			}
		})
	}
	if pts := chartPoints(nil, mdChartPoints); pts != nil {
		t.Errorf("no timeline gives %v, want no points", pts)
	}
}

// TestMarkdownChart: the Mermaid blocks are xychart-beta charts of one
// line each (xychart has no legend), each in its own strong colour set by
// an init directive, with a numeric x axis (Mermaid's sparse ticks, never
// a label per point) and at most mdChartPoints values; none without a
// timeline.
func TestMarkdownChart(t *testing.T) {
	block := regexp.MustCompile("(?s)```mermaid\n%%\\{init: \\{\"theme\": \"base\", \"themeVariables\": \\{\"xyChart\": \\{\"plotColorPalette\": \"(#[0-9a-f]{6})\"\\}\\}\\}\\}%%\n" +
		"xychart-beta\n    title \"[^\"]+\"\n    x-axis \"seconds since start\" ([0-9.]+) --> ([0-9.]+)\n    y-axis \"[^\"]+\"\n    line \\[([^\\]]*)\\]\n```")
	for _, n := range []int{0, 1, 3, 59, 60, 61, 1000} {
		r := Evaluate(testPlan(), nil, fullStats(t))
		r.Timeline = timeline(n)
		var b bytes.Buffer
		if err := WriteMarkdown(&b, r); err != nil {
			t.Fatal(err)
		}
		md := b.String()
		charts := block.FindAllStringSubmatch(md, -1)
		if all := strings.Count(md, "```mermaid"); all != len(charts) || n == 0 && all != 0 || n > 0 && all != 3 {
			t.Errorf("%d seconds: %d Mermaid charts, %d of them as they should be; want 3", n, all, len(charts))
			continue
		}
		want := min(n, mdChartPoints)
		if n == 61 {
			want = 31
		}
		if n == 1000 {
			want = 59 // buckets of 17 s
		}
		colours := map[string]bool{}
		for _, m := range charts {
			colours[m[1]] = true
			if got := len(strings.Split(m[4], ", ")); got != want {
				t.Errorf("%d seconds: a line has %d values, want %d", n, got, want)
			}
			from, _ := strconv.ParseFloat(m[2], 64)
			to, _ := strconv.ParseFloat(m[3], 64)
			if !(from < to) {
				t.Errorf("%d seconds: x axis %s --> %s does not grow", n, m[2], m[3])
			}
		}
		if n > 0 && len(colours) != 3 {
			t.Errorf("%d seconds: colours %v, want one of its own per chart", n, colours)
		}
	}
}

// splitCells splits a table row at its unescaped bars.
func splitCells(row string) []string {
	var cells []string
	start := 0
	for i := 0; i < len(row); i++ {
		switch row[i] {
		case '\\':
			i++
		case '|':
			cells = append(cells, row[start:i])
			start = i + 1
		}
	}
	return append(cells, row[start:])
}

// TestMarkdownEscapes: text from the plan or the run cannot break a table
// or inject markup.
func TestMarkdownEscapes(t *testing.T) {
	tests := []struct {
		name, in, text, code string
		cell                 string // "": the same as code
	}{
		{"plain", "pub-1: connection refused", "pub-1: connection refused", "`pub-1: connection refused`", ""},
		{"underscores inside words", "lost_unsent _x_ a_ _b", `lost_unsent \_x\_ a\_ \_b`, "`lost_unsent _x_ a_ _b`", ""},
		// A code span takes no escapes: a bar stays bare in prose, and a
		// cell with a bar is escaped text, never a code span with \|.
		{"table bar", "a | b", `a \| b`, "`a | b`", `a \| b`},
		{"bar in a threshold", `groups["a|b"].sent > 0`, `groups\["a\|b"\].sent \> 0`, "`groups[\"a|b\"].sent > 0`", `groups\["a\|b"\].sent \> 0`},
		{"math dollars", "$$x$$ costs $5", `\$\$x\$\$ costs \$5`, "`$$x$$ costs $5`", ""},
		{"markup", "<script>*x*_y_[l](u)&amp;~z~#!", `\<script\>\*x\*\_y\_\[l\](u)\&amp;\~z\~\#\!`, "`<script>*x*_y_[l](u)&amp;~z~#!`", ""},
		{"backticks", "a`b``c", "a\\`b\\`\\`c", "``` a`b``c ```", ""},
		{"lines", "one\ntwo\r\nthree\x00", "one two  three", "`one two  three`", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mdText(tt.in); got != tt.text {
				t.Errorf("mdText(%q) = %q, want %q", tt.in, got, tt.text)
			}
			if got := mdCode(tt.in); got != tt.code {
				t.Errorf("mdCode(%q) = %q, want %q", tt.in, got, tt.code)
			}
			cell := tt.cell
			if cell == "" {
				cell = tt.code
			}
			if got := mdCell(tt.in); got != cell {
				t.Errorf("mdCell(%q) = %q, want %q", tt.in, got, cell)
			}
		})
	}

	// Whole report: a hostile group and error keep every table row's
	// cell count.
	p := testPlan(`groups["a|b"].sent > 0`)
	p.Name = "x | <b>y</b>"
	p.Groups[0].Name = "a|b"
	st := fullStats(t)
	st.Groups[0].Name = "a|b"
	st.ErrorSamples = []string{"line\nbreak | bar"}
	var b bytes.Buffer
	if err := WriteMarkdown(&b, Evaluate(p, compile(t, p), st)); err != nil {
		t.Fatal(err)
	}
	cells := func(line string) int { return len(regexp.MustCompile(`(^|[^\\])\|`).FindAllString(line, -1)) }
	var header int
	for _, line := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(line, "|") {
			header = 0
			continue
		}
		if header == 0 {
			header = cells(line)
		} else if got := cells(line); got != header {
			t.Errorf("row %q has %d cell bars, its header %d", line, got, header)
		}
	}
	// No cell is a code span holding an escaped bar, which renderers
	// that read code spans before the table show with its backslash; the
	// error sample's bar stays bare in its list item.
	for _, line := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		for _, cell := range splitCells(line) {
			if c := strings.TrimSpace(cell); strings.HasPrefix(c, "`") && strings.Contains(c, `\|`) {
				t.Errorf("cell %q is a code span with an escaped bar", c)
			}
		}
	}
	if !strings.Contains(b.String(), "- `line break | bar`\n") {
		t.Errorf("the error sample is not shown as written:\n%s", b.String())
	}
	golden.Check(t, filepath.Join(goldenDir, "escapes.md"), b.Bytes())
	if strings.Contains(b.String(), "<b>") {
		t.Errorf("markup from the plan name reached the Markdown:\n%s", b.String())
	}
}
