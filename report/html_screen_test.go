package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/internal/browsertest"
	"github.com/mqplan/mqplan/stats"
)

// TestCounterRates: a broker counter held for some seconds (a $SYS topic
// republished only when it changes) reads as the rate since its last
// change over the held seconds, not 0 then twice the rate; a broker gone
// quiet reads 0; a restart or an unsampled second is a gap.
func TestCounterRates(t *testing.T) {
	c := brokerstat.PublishReceived
	tests := []struct {
		name   string
		start  int64 // -1: not sampled at the start
		values []int64
		want   string
	}{
		{"every second", 0, []int64{100, 200, 300}, "100 100 100"},
		{"held every other second", 0, []int64{0, 200, 200, 400, 400, 600}, "100 100 100 100 100 100"},
		{"held at the end", 0, []int64{0, 200, 200, 400, 400}, "100 100 100 100 nil"},
		{"held three seconds", 0, []int64{0, 0, 300, 300, 300, 600}, "100 100 100 100 100 100"},
		{"quiet at the end", 0, []int64{100, 200, 200, 200, 200}, "100 100 0 0 0"},
		{"longer than maxCounterHold", 0, []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 100}, "0 0 0 10 10 10 10 10 10 10 10 10 10"},
		{"restarted", 0, []int64{100, 200, 5, 105}, "100 100 nil 100"},
		{"not sampled", 0, []int64{100, -1, 300, 400}, "100 nil nil 100"},
		{"not sampled at the start", -1, []int64{100, 200}, "nil 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := func(v int64) brokerstat.Counters {
				if v < 0 {
					return brokerstat.Counters{}
				}
				return counters(map[brokerstat.Counter]int64{c: v})
			}
			tl := make([]stats.Second, len(tt.values))
			for i, v := range tt.values {
				tl[i] = stats.Second{At: time.Duration(i+1) * time.Second, Counters: set(v)}
			}
			var got []string
			for _, v := range counterRates(set(tt.start), tl, c) {
				if v == nil {
					got = append(got, "nil")
				} else {
					got = append(got, fmt.Sprint(*v))
				}
			}
			if s := strings.Join(got, " "); s != tt.want {
				t.Errorf("rates %s, want %s", s, tt.want)
			}
		})
	}
}

// TestHistogram: the buckets run on the 1-1.5-2-3-5-7 scale from the
// bucket holding the least sample to the one holding the greatest, empty
// ones between kept, and their counts add up to the samples.
func TestHistogram(t *testing.T) {
	tests := []struct {
		name    string
		samples []int64 // microseconds
		want    string
	}{
		{"one value", []int64{1000}, "1ms:1"},
		{"two modes", []int64{900, 1000, 1000, 4000, 6500}, "1ms:3 1.5ms:0 2ms:0 3ms:0 5ms:1 7ms:1"},
		{"on a bound", []int64{1500, 1501}, "1.5ms:1 2ms:1"},
		{"sub-microsecond", []int64{0, 1, 2}, "1µs:2 1.5µs:0 2µs:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := hdrhistogram.New(1, 3_600_000_000, 3)
			for _, v := range tt.samples {
				if err := h.RecordValue(v); err != nil {
					t.Fatal(err)
				}
			}
			hg, ok := histogram("e2e", h)
			if !ok {
				t.Fatal("no histogram")
			}
			var got []string
			var sum int64
			for _, b := range hg.Buckets {
				got = append(got, fmt.Sprintf("%s:%d", b.Upper, b.Count))
				sum += b.Count
			}
			if s := strings.Join(got, " "); s != tt.want {
				t.Errorf("buckets %s, want %s", s, tt.want)
			}
			if sum != hg.Samples || hg.Samples != int64(len(tt.samples)) {
				t.Errorf("counts add up to %d, samples %d, want %d", sum, hg.Samples, len(tt.samples))
			}
		})
	}
	if _, ok := histogram("e2e", hdrhistogram.New(1, 1000, 3)); ok {
		t.Error("an empty histogram has buckets")
	}
}

// TestHTMLFirstScreen: the headline tiles come before the thresholds; the
// built-in checks fold into one row when they all held and are listed
// one by one when one failed; text cells are left-aligned, figures right.
func TestHTMLFirstScreen(t *testing.T) {
	tests := []struct {
		name      string
		r         *Result
		want      []string
		lack      []string
		tilesLead bool
	}{
		{"pass", goldenResult(t, "pass"), []string{
			`<div class="tile pass"><div class="label">verdict</div><div class="value">PASS</div>`,
			`<div class="label">received</div><div class="value">`,
			`<div class="label">latency p99</div>`,
			`<div class="label">peak connections</div><div class="value">7</div><div class="detail">of 8 planned</div>`,
			`built-in checks held</summary>`,
		}, []string{`<td>built in</td>`}, true},
		{"fail", goldenResult(t, "faults"), []string{
			`<div class="tile fail"><div class="label">verdict</div><div class="value">FAIL</div>`,
			`<div class="tile fail"><div class="label">errors</div>`,
			`<td>built in</td>`,
		}, []string{`built-in checks held</summary>`}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := renderHTML(t, tt.r)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
			for _, l := range tt.lack {
				if strings.Contains(out, l) {
					t.Errorf("the page has %q", l)
				}
			}
			if i, j := strings.Index(out, `id="tiles"`), strings.Index(out, `id="thresholds"`); i < 0 || i > j {
				t.Errorf("the tiles (at %d) are not above the thresholds (at %d)", i, j)
			}
		})
	}
}

func TestNumericCell(t *testing.T) {
	for cell, want := range map[string]bool{
		"12": true, "1.5ms": true, "0.75%": true, "1m28s": true, "-": true, "12.3 MiB": true, "1234 (5%)": true, "+10": true,
		"sub": false, "subscribe, publish": false, "from 0": false, "WORSE": false, "": false, "bench/%i (QoS 1)": false,
	} {
		if got := numericCell(cell); got != want {
			t.Errorf("numericCell(%q) = %v, want %v", cell, got, want)
		}
	}
}

func TestErrorKinds(t *testing.T) {
	got := errorKinds([]string{"publish pub-3: connection closed (and 1 more like it)", "connect: refused", "7 more of other kinds"})
	want := []htmlErrorKind{{"2", "publish pub-3: connection closed"}, {"1", "connect: refused"}, {"7", "(kinds past the first ones, not sampled)"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("errorKinds = %v, want %v", got, want)
	}
}

// goldenResult is the golden case name's result.
func goldenResult(t *testing.T, name string) *Result {
	t.Helper()
	for _, tc := range goldenCases(t) {
		if tc.name == name {
			return tc.r
		}
	}
	t.Fatalf("no golden case %q", name)
	return nil
}

// TestHTMLLegendsInBrowser: off the cursor, each legend shows its
// series' min, mean and max (uPlot alone shows "--", which a screenshot
// or a print keeps), the histogram's its sample count; the wall-clock
// toggle redraws the charts without a script error.
func TestHTMLLegendsInBrowser(t *testing.T) {
	if browsertest.Binary() == "" && os.Getenv("CI") == "" {
		t.Skip("chromium is not installed (apt-get install chromium); skipping the browser test")
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, []byte(renderHTML(t, goldenResult(t, "pass"))), 0o644); err != nil {
		t.Fatal(err)
	}
	const read = `(function () {
  function legend(id) {
    return Array.from(document.querySelectorAll("#" + id + " .u-legend .u-value")).map(function (e) { return e.textContent; });
  }
  var out = {rate: legend("chart-rate"), hist: legend("chart-hist-e2e")};
  document.getElementById("wallclock").click();
  out.wall = document.body.dataset.wallclock || "";
  out.errors = document.body.dataset.errors || "";
  return out;
})()`
	p := browsertest.Open(t, path, 1400, browsertest.ChartsReady, read)
	for _, e := range p.Errors {
		t.Errorf("browser error: %s", e)
	}
	var got struct {
		Rate, Hist   []string
		Wall, Errors string
	}
	if err := json.Unmarshal(p.Value, &got); err != nil {
		t.Fatalf("reading the page: %v (%s)", err, p.Value)
	}
	// The x series' cell first (empty off the cursor), then sent/s and
	// received/s: the fixture sends 800/s and receives 799/s every second.
	want := []string{"", "min 800 · mean 800 · max 800", "min 799 · mean 799 · max 799"}
	if fmt.Sprint(got.Rate) != fmt.Sprint(want) {
		t.Errorf("rate legend %q, want %q", got.Rate, want)
	}
	if len(got.Hist) != 2 || !strings.HasSuffix(got.Hist[1], " in all, in 3 buckets") {
		t.Errorf("histogram legend %q, want its sample count", got.Hist)
	}
	if got.Wall != "true" || got.Errors != "0" {
		t.Errorf("after the wall-clock toggle: wallclock %q, %s script errors", got.Wall, got.Errors)
	}
}
