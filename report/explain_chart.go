package report

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
)

// Rate chart geometry: chartWidth columns of chartRows rows of eighth
// blocks (32 levels), each publishing phase given at least chartMinCols
// columns so that a 5 s warmup still shows beside an hour of steady.
const (
	chartWidth   = 60
	chartRows    = 4
	chartMinCols = 10
)

// blocks are the eighth blocks, from empty to full.
var blocks = [...]rune{' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'}

// chartSpan is one publishing phase on the chart: its offsets from the
// start of warmup and its columns.
type chartSpan struct {
	ph       phase.Phase
	from, to time.Duration
	cols     int
}

// writeRateChart draws the plan's total publish rate (every group's
// messages per second together) over warmup, ramp and steady as a few
// lines of block characters, with each phase's start under the chart.
// Each column's height is its exact message count (Program.Sends, the
// figure the phase table sums) over its width, so the chart is the plan's
// timetable, not an approximation of it. The phases share the columns in
// proportion to their lengths, each with at least chartMinCols, so the
// time axis is linear within a phase only (its times are printed). A plan
// that publishes nothing, or only as fast as acknowledgements allow
// (rate: max, which has no timetable), gets no chart.
func writeRateChart(b *strings.Builder, prog *plans.Program) {
	spans := chartSpans(prog)
	if len(spans) == 0 {
		return
	}
	var rates []float64
	for _, sp := range spans {
		w := (sp.to - sp.from) / time.Duration(sp.cols)
		for c := 0; c < sp.cols; c++ {
			from := sp.from + time.Duration(c)*w
			to := from + w
			if c == sp.cols-1 {
				to = sp.to
			}
			rates = append(rates, chartRate(prog, from, to))
		}
	}
	top := 0.0
	for _, r := range rates {
		top = math.Max(top, r)
	}
	if top == 0 {
		return
	}
	labels := [chartRows]string{0: fmtFloat(top)}
	labels[chartRows-1] = "0"
	lw := max(len(labels[0]), 1)
	fmt.Fprintf(b, "\npublish rate, msg/s (all groups; time axis linear within each phase)\n")
	for row := 0; row < chartRows; row++ {
		fmt.Fprintf(b, "%*s ┤", lw, labels[row])
		var line strings.Builder
		for _, r := range rates {
			// Levels in eighths of a row, bottom row first; a column that
			// sends anything shows at least the lowest block.
			level := int(math.Round(r / top * chartRows * 8))
			if r > 0 && level == 0 {
				level = 1
			}
			fill := level - (chartRows-1-row)*8
			line.WriteRune(blocks[min(max(fill, 0), 8)])
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteString("\n")
	}
	// The phases under the chart: a tick at each start, its name and
	// start time after it when they fit.
	axis := []rune(strings.Repeat("─", len(rates)))
	names := []rune(strings.Repeat(" ", len(rates)+20))
	col := 0
	for _, sp := range spans {
		axis[col] = '┴'
		label := []rune(fmt.Sprintf("%s %s", sp.ph, fmtDuration(sp.from)))
		if len(label) >= sp.cols {
			label = []rune(sp.ph.String())
		}
		copy(names[col:], label)
		col += sp.cols
	}
	end := fmtDuration(spans[len(spans)-1].to)
	fmt.Fprintf(b, "%*s └%s┘\n", lw, "", string(axis))
	fmt.Fprintf(b, "%*s  %s\n", lw, "", strings.TrimRight(string(names[:len(rates)])+" "+end, " "))
}

// chartSpans lays the publishing phases that last out over the chart's
// columns, or returns nil when the plan has no timetable to draw.
func chartSpans(prog *plans.Program) []chartSpan {
	if prog.ClosedLoop() {
		return nil
	}
	bounds := [...]time.Duration{0, prog.Warmup, prog.Warmup + prog.Ramp, prog.Warmup + prog.Ramp + prog.Steady}
	var spans []chartSpan
	var total time.Duration
	for i, ph := range [...]phase.Phase{phase.Warmup, phase.Ramp, phase.Steady} {
		if bounds[i+1] > bounds[i] {
			spans = append(spans, chartSpan{ph: ph, from: bounds[i], to: bounds[i+1]})
			total += bounds[i+1] - bounds[i]
		}
	}
	if len(spans) == 0 {
		return nil
	}
	free := chartWidth - chartMinCols*len(spans)
	used := 0
	for i := range spans {
		share := float64(spans[i].to-spans[i].from) / float64(total)
		spans[i].cols = chartMinCols + int(share*float64(free))
		used += spans[i].cols
	}
	spans[len(spans)-1].cols += chartWidth - used // rounding's leftovers
	return spans
}

// chartRate is every publisher's planned messages per second over
// [from, to) (offsets from the start of warmup).
func chartRate(prog *plans.Program, from, to time.Duration) float64 {
	if to <= from {
		return 0
	}
	n := 0
	for i := range prog.Clients {
		n += prog.Sends(&prog.Clients[i], from, to)
	}
	return float64(n) / (to - from).Seconds()
}
