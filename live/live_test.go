package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs url as Prometheus does (text format) and parses the answer
// with Prometheus' own text parser.
func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp := get(t, url, "text/plain;version=0.0.4")
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

// get GETs url asking for the exposition format accept, and fails the
// test unless the answer is 200 OK.
func get(t testing.TB, url, accept string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("scrape %s: %s", url, resp.Status)
	}
	return resp
}

// protoAccept is what a Prometheus that keeps native histograms asks for:
// the delimited protobuf exposition format.
const protoAccept = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"

// scrapeProto GETs url asking for the protobuf format, as a Prometheus
// scraping native histograms does, and decodes it with expfmt.
func scrapeProto(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp := get(t, url, protoAccept)
	defer resp.Body.Close()
	format := expfmt.ResponseFormat(resp.Header)
	if format.FormatType() != expfmt.TypeProtoDelim {
		t.Fatalf("scrape %s: asked for protobuf, got %q", url, resp.Header.Get("Content-Type"))
	}
	dec := expfmt.NewDecoder(resp.Body, format)
	fams := map[string]*dto.MetricFamily{}
	for {
		f := &dto.MetricFamily{}
		if err := dec.Decode(f); errors.Is(err, io.EOF) {
			return fams
		} else if err != nil {
			t.Fatalf("decode %s: %v", url, err)
		}
		fams[f.GetName()] = f
	}
}

// nativeBuckets decodes a native histogram's positive buckets (spans of
// consecutive indexes, counts delta-encoded) into index → count.
func nativeBuckets(t testing.TB, h *dto.Histogram) map[int]int64 {
	t.Helper()
	out := map[int]int64{}
	idx, d, count := 0, 0, int64(0)
	for _, sp := range h.GetPositiveSpan() {
		idx += int(sp.GetOffset())
		for range sp.GetLength() {
			if d >= len(h.GetPositiveDelta()) {
				t.Fatalf("native spans cover more buckets than the %d deltas", len(h.GetPositiveDelta()))
			}
			count += h.GetPositiveDelta()[d]
			d++
			out[idx] = count
			idx++
		}
	}
	if d != len(h.GetPositiveDelta()) {
		t.Fatalf("%d deltas for %d native buckets", len(h.GetPositiveDelta()), d)
	}
	return out
}

// sample is the value of family name's series with exactly these labels
// (name=value pairs, in any order) beside run_id, which every series
// has; ok is false when there is no such series.
func sample(fams map[string]*dto.MetricFamily, name string, labels ...string) (v float64, ok bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
next:
	for _, m := range f.GetMetric() {
		n := 0
		for _, l := range m.GetLabel() {
			if l.GetName() == "run_id" {
				continue
			}
			n++
			if w, ok := want[l.GetName()]; !ok || w != l.GetValue() {
				continue next
			}
		}
		if n != len(want) {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		}
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

// currentPhase is the phase whose mqplan_phase gauge is 1, "" when none
// is, and an error when more than one is.
func currentPhase(fams map[string]*dto.MetricFamily) (string, error) {
	var on []string
	for _, m := range fams["mqplan_phase"].GetMetric() {
		if m.GetGauge().GetValue() == 1 {
			on = append(on, labelOf(m, "phase"))
		}
	}
	if len(on) > 1 {
		return "", fmt.Errorf("phases %v are all 1", on)
	}
	return strings.Join(on, ""), nil
}

// TestExporter feeds seconds to an exporter and reads them back through
// its handler and the text parser: counters are the sums of the seconds,
// gauges the last second's, the phase gauge one-hot, every family with
// its HELP.
func TestExporter(t *testing.T) {
	sec := func(p phase.Phase, groups ...stats.GroupSecond) stats.Second {
		return stats.Second{Phase: p, Groups: groups}
	}
	pubSec := stats.GroupSecond{Group: "pub", Connected: 2, Sent: 100, Acked: 98, Errors: 1}
	subSec := stats.GroupSecond{Group: "sub", Connected: 3, Lost: 1, Received: 250, Duplicates: 2, Disconnects: 1,
		P50: 500 * time.Microsecond, P99: 2 * time.Millisecond, Max: 3 * time.Millisecond}
	quiet := stats.GroupSecond{Connected: 1}
	tests := []struct {
		name    string
		seconds []stats.Second
		// lost[i] is given with ObserveLost (group sub) before seconds[i].
		lost  []int64
		want  map[string]float64 // "name group" -> value; NaN for NaN
		phase string
	}{
		{name: "before the first second everything is zero and no phase is on",
			want: map[string]float64{"mqplan_messages_sent_total pub": 0, "mqplan_messages_received_total sub": 0,
				"mqplan_clients_connected sub": 0, "mqplan_latency_seconds sub max": math.NaN(), "mqplan_messages_lost sub": 0},
		},
		{name: "lost so far is the last figure given, a gauge that may go down",
			seconds: []stats.Second{sec(phase.Steady, pubSec, subSec), sec(phase.Steady, pubSec, subSec), sec(phase.Drain, quiet, quiet)},
			lost:    []int64{0, 7, 4},
			phase:   "drain",
			want:    map[string]float64{"mqplan_messages_lost sub": 4, "mqplan_messages_lost pub": 0}},
		{name: "lost so far waits for its second",
			seconds: []stats.Second{sec(phase.Steady, pubSec, subSec), sec(phase.Steady, pubSec, subSec)},
			lost:    []int64{3, -1, 9}, // the 9 comes with no second; -1 is 0
			phase:   "steady",
			want:    map[string]float64{"mqplan_messages_lost sub": 0}},
		{name: "counters add up the seconds and gauges hold the last",
			seconds: []stats.Second{sec(phase.Connect, quiet, quiet), sec(phase.Steady, pubSec, subSec), sec(phase.Steady, pubSec, subSec)},
			phase:   "steady",
			want: map[string]float64{
				"mqplan_messages_sent_total pub": 200, "mqplan_messages_acked_total pub": 196,
				"mqplan_errors_total pub": 2, "mqplan_messages_sent_total sub": 0,
				"mqplan_messages_received_total sub": 500, "mqplan_messages_duplicated_total sub": 4,
				"mqplan_disconnects_total sub": 2, "mqplan_clients_connected sub": 3, "mqplan_clients_down sub": 1,
				"mqplan_clients_connected pub":   2,
				"mqplan_latency_seconds sub p50": 0.0005, "mqplan_latency_seconds sub p99": 0.002,
				"mqplan_latency_seconds sub max": 0.003,
				"mqplan_latency_seconds pub p99": math.NaN(),
			}},
		{name: "a second without deliveries makes the latency NaN, not stale",
			seconds: []stats.Second{sec(phase.Steady, pubSec, subSec), sec(phase.Drain, quiet, quiet)},
			phase:   "drain",
			want: map[string]float64{"mqplan_latency_seconds sub p50": math.NaN(), "mqplan_messages_received_total sub": 250,
				"mqplan_clients_connected sub": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := New([]string{"pub", "sub"}, Info{RunID: "test", Thresholds: []string{"p99 < 10ms"}})
			for i, s := range tt.seconds {
				if i < len(tt.lost) {
					x.ObserveLost(1, tt.lost[i])
				}
				x.Observe(s)
			}
			for _, n := range tt.lost[min(len(tt.lost), len(tt.seconds)):] {
				x.ObserveLost(1, n)
			}
			x.ObserveLost(9, 100) // no such group: ignored
			srv := httptest.NewServer(x.Handler())
			defer srv.Close()
			fams := scrape(t, srv.URL)
			for key, want := range tt.want {
				f := strings.Fields(key)
				labels := []string{"group", f[1]}
				if len(f) == 3 {
					labels = append(labels, "stat", f[2])
				}
				got, ok := sample(fams, f[0], labels...)
				switch {
				case !ok:
					t.Errorf("%s: no such series", key)
				case math.IsNaN(want) != math.IsNaN(got) || !math.IsNaN(want) && got != want:
					t.Errorf("%s = %v, want %v", key, got, want)
				}
			}
			ph, err := currentPhase(fams)
			if err != nil || ph != tt.phase {
				t.Errorf("phase %q (%v), want %q", ph, err, tt.phase)
			}
			if n := len(fams["mqplan_phase"].GetMetric()); n != phase.Count {
				t.Errorf("mqplan_phase has %d series, want one per phase (%d)", n, phase.Count)
			}
			for _, m := range Metrics {
				f := fams[m.Name]
				if f == nil {
					t.Errorf("%s is not served", m.Name)
					continue
				}
				if f.GetHelp() != m.Help || len(m.Help) < 20 {
					t.Errorf("%s HELP %q, want the documented %q", m.Name, f.GetHelp(), m.Help)
				}
			}
			if len(fams) != len(Metrics) {
				t.Errorf("served %d families, Metrics lists %d", len(fams), len(Metrics))
			}
		})
	}
}

// TestExporterRejectsBadLabels: a group name that is not UTF-8 fails the
// scrape with a reason instead of panicking the run.
func TestExporterRejectsBadLabels(t *testing.T) {
	x := New([]string{"ok", "bad\xff"}, Info{RunID: "test"})
	rec := httptest.NewRecorder()
	x.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "UTF-8") {
		t.Fatalf("status %d body %q, want 500 naming the invalid label value", rec.Code, rec.Body.String())
	}
}

// histogram is family name's histogram for group, nil when absent.
func histogram(fams map[string]*dto.MetricFamily, name, group string) *dto.Histogram {
	for _, m := range fams[name].GetMetric() {
		if labelOf(m, "group") == group {
			return m.GetHistogram()
		}
	}
	return nil
}

// bucketCounts maps a histogram's upper bounds to their cumulative counts.
func bucketCounts(h *dto.Histogram) map[float64]uint64 {
	out := map[float64]uint64{}
	for _, b := range h.GetBucket() {
		out[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	return out
}

// latencyFamilies are the histogram families and how each is fed.
var latencyFamilies = []struct {
	name    string
	observe func(*Exporter, int, *hdrhistogram.Histogram)
}{
	{"mqplan_e2e_latency_seconds", (*Exporter).ObserveLatency},
	{"mqplan_ack_latency_seconds", (*Exporter).ObserveAck},
}

// TestExporterLatencyHistogram: the latencies given with ObserveLatency
// (ObserveAck) appear in mqplan_e2e_latency_seconds
// (mqplan_ack_latency_seconds) when Observe takes their second, in the
// buckets their values fall in, cumulative, with their count and sum; a
// group that had none has an empty histogram, and neither family takes
// the other's.
func TestExporterLatencyHistogram(t *testing.T) {
	h := stats.NewHistogram()
	for _, v := range []struct{ us, n int64 }{{100, 3}, {1000, 2}, {3000, 1}} {
		if err := h.RecordValues(v.us, v.n); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name      string
		seconds   int // Observe calls after ObserveLatency
		count     uint64
		buckets   map[float64]uint64
		sumAround float64
	}{
		{name: "pending until its second is observed", seconds: 0, count: 0,
			buckets: map[float64]uint64{0.0001: 0, 10: 0}},
		{name: "bucketed cumulatively once observed", seconds: 1, count: 6, sumAround: 0.0053,
			buckets: map[float64]uint64{0.0001: 3, 0.00025: 3, 0.001: 5, 0.0025: 5, 0.005: 6, 10: 6}},
		{name: "a second without latencies adds none", seconds: 2, count: 6, sumAround: 0.0053,
			buckets: map[float64]uint64{0.0001: 3, 0.001: 5, 0.005: 6}},
	}
	for _, fam := range latencyFamilies {
		for _, tt := range tests {
			t.Run(fam.name+"/"+tt.name, func(t *testing.T) {
				x := New([]string{"pub", "sub"}, Info{RunID: "test", Thresholds: []string{"p99 < 10ms"}})
				fam.observe(x, 1, h)
				fam.observe(x, 7, h) // no such group: ignored
				for range tt.seconds {
					x.Observe(stats.Second{Groups: make([]stats.GroupSecond, 2)})
				}
				srv := httptest.NewServer(x.Handler())
				defer srv.Close()
				fams := scrape(t, srv.URL)
				for _, other := range latencyFamilies {
					if o := histogram(fams, other.name, "sub"); other.name != fam.name && o.GetSampleCount() != 0 {
						t.Errorf("%s counts %d, fed nothing", other.name, o.GetSampleCount())
					}
				}
				checkHistogram(t, fams, fam.name, tt.count, tt.sumAround, tt.buckets)
			})
		}
	}
}

// checkHistogram checks family name's histograms: group pub's empty,
// group sub's with count samples summing to about sumAround, every
// classic bucket, and those of buckets (upper bound → cumulative count).
func checkHistogram(t *testing.T, fams map[string]*dto.MetricFamily, name string, count uint64, sumAround float64, buckets map[float64]uint64) {
	t.Helper()
	sub, pub := histogram(fams, name, "sub"), histogram(fams, name, "pub")
	if sub == nil || pub == nil {
		t.Fatalf("%s: no histogram for each group: %v", name, fams[name])
	}
	if pub.GetSampleCount() != 0 {
		t.Errorf("%s: pub had nothing, its histogram counts %d", name, pub.GetSampleCount())
	}
	if sub.GetSampleCount() != count {
		t.Errorf("%s: count %d, want %d", name, sub.GetSampleCount(), count)
	}
	if math.Abs(sub.GetSampleSum()-sumAround) > sumAround/100 {
		t.Errorf("%s: sum %v, want about %v", name, sub.GetSampleSum(), sumAround)
	}
	got := bucketCounts(sub)
	if len(got) != len(latencyBuckets)+1 || got[math.Inf(1)] != count {
		t.Errorf("%s: %d buckets, +Inf %d: want %d and the count", name, len(got), got[math.Inf(1)], len(latencyBuckets)+1)
	}
	for le, want := range buckets {
		if got[le] != want {
			t.Errorf("%s: bucket le=%v counts %d, want %d (all: %v)", name, le, got[le], want, got)
		}
	}
}

// TestExporterNativeHistograms scrapes the latency histograms as a
// Prometheus keeping native histograms does (the protobuf format,
// decoded with expfmt): each is one sample with native buckets of schema
// 3 that add up to its count, every value in the bucket whose bounds hold
// it, and the classic buckets too, so that a scraper of either kind sees
// the same histogram.
func TestExporterNativeHistograms(t *testing.T) {
	tests := []struct {
		name   string
		values []struct{ us, n int64 } // each exact at 3 significant digits
	}{
		{name: "no sample is an empty native histogram"},
		{name: "one value", values: []struct{ us, n int64 }{{1000, 4}}},
		{name: "from 1µs to 2s", values: []struct{ us, n int64 }{{1, 2}, {100, 3}, {1000, 2}, {3000, 1}, {1 << 21, 5}}},
	}
	for _, fam := range latencyFamilies {
		for _, tt := range tests {
			t.Run(fam.name+"/"+tt.name, func(t *testing.T) {
				x := New([]string{"pub", "sub"}, Info{RunID: "test", Thresholds: []string{"p99 < 10ms"}})
				h := stats.NewHistogram()
				var count uint64
				want := map[int]int64{} // native bucket → count
				for _, v := range tt.values {
					if err := h.RecordValues(v.us, v.n); err != nil {
						t.Fatal(err)
					}
					count += uint64(v.n)
					want[bucketHolding(t, float64(v.us)/1e6)] += v.n
				}
				if count > 0 {
					fam.observe(x, 1, h)
				}
				x.Observe(stats.Second{Groups: make([]stats.GroupSecond, 2)})
				srv := httptest.NewServer(x.Handler())
				defer srv.Close()

				fams := scrapeProto(t, srv.URL)
				if f := fams[fam.name]; f.GetType() != dto.MetricType_HISTOGRAM {
					t.Fatalf("%s: type %v over protobuf", fam.name, f.GetType())
				}
				sub := histogram(fams, fam.name, "sub")
				if sub.GetSchema() != nativeSchema || sub.GetZeroCount() != 0 || sub.GetSampleCount() != count {
					t.Errorf("schema %d, zero bucket %d, count %d: want %d, 0, %d", sub.GetSchema(), sub.GetZeroCount(), sub.GetSampleCount(), nativeSchema, count)
				}
				// Prometheus' protobuf parser (isNativeHistogram) takes a
				// histogram for native when it has a span, a zero
				// threshold or a zero count, else for classic.
				if len(sub.GetPositiveSpan()) == 0 && sub.GetZeroThreshold() <= 0 && sub.GetZeroCount() == 0 {
					t.Errorf("no span and no zero threshold: Prometheus would take it for a classic histogram")
				}
				got := nativeBuckets(t, sub)
				var sum int64
				for i, n := range got {
					sum += n
					if n != want[i] {
						t.Errorf("native bucket %d (up to %gs) counts %d, want %d", i, math.Exp2(float64(i)/8), n, want[i])
					}
				}
				if uint64(sum) != count || len(got) != len(want) {
					t.Errorf("native buckets %v add up to %d, want %v adding up to the count %d", got, sum, want, count)
				}
				// The classic buckets are there too (protobuf leaves +Inf
				// implicit: it is the count), and the text format has
				// the same, +Inf written out.
				classic := bucketCounts(sub)
				if len(classic) != len(latencyBuckets) {
					t.Errorf("%d classic buckets beside the native ones, want %d", len(classic), len(latencyBuckets))
				}
				text := histogram(scrape(t, srv.URL), fam.name, "sub")
				if text.GetSampleCount() != count || text.GetSampleSum() != sub.GetSampleSum() || len(text.GetBucket()) != len(latencyBuckets)+1 {
					t.Errorf("text format: count %d sum %v, %d buckets; protobuf: count %d sum %v",
						text.GetSampleCount(), text.GetSampleSum(), len(text.GetBucket()), count, sub.GetSampleSum())
				}
				for le, n := range bucketCounts(text) {
					if c, ok := classic[le]; (ok || !math.IsInf(le, 1)) && c != n {
						t.Errorf("classic bucket le=%v: %d in text, %d in protobuf", le, n, c)
					}
				}
			})
		}
	}
}

// bucketHolding is the index i of the schema-3 native bucket holding v,
// (2^((i-1)/8), 2^(i/8)], found by walking the bounds.
func bucketHolding(t *testing.T, v float64) int {
	for i := -8 * 30; i <= 8*10; i++ {
		if math.Exp2(float64(i-1)/8) < v && v <= math.Exp2(float64(i)/8) {
			return i
		}
	}
	t.Fatalf("no native bucket holds %v", v)
	return 0
}

// TestExporterLint: what the exporter serves passes Prometheus' own
// metric linter (names, units, counter suffixes, HELP, no "quantile"
// label outside a summary), with every family holding samples.
func TestExporterLint(t *testing.T) {
	srv := httptest.NewServer(finishedExporter(t).Handler())
	defer srv.Close()
	fams := scrape(t, srv.URL)
	var list []*dto.MetricFamily
	for _, f := range fams {
		list = append(list, f)
	}
	problems, err := promlint.NewWithMetricFamilies(list).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// finishedExporter is an exporter of a finished run in which every family
// holds samples.
func finishedExporter(t *testing.T) *Exporter {
	t.Helper()
	x := New([]string{"pub", "sub"}, Info{RunID: "r-1", Plan: "plans/p.yaml", Broker: "mqtts://user:***@127.0.0.1:8883",
		Version: "v0.0.0", Revision: "abc", Thresholds: []string{"p99 < 10ms", "lost == 0", "p99 < 10ms"}})
	h := stats.NewHistogram()
	if err := h.RecordValues(1500, 3); err != nil {
		t.Fatal(err)
	}
	x.ObserveLatency(1, h)
	x.ObserveAck(0, h)
	x.ObserveLost(1, 2)
	x.Observe(stats.Second{Phase: phase.Steady, Groups: []stats.GroupSecond{
		{Group: "pub", Connected: 1, Sent: 10, Acked: 3},
		{Group: "sub", Connected: 1, Received: 8, P50: time.Millisecond, P99: time.Millisecond, Max: time.Millisecond}}})
	x.Finish(Final{Unsent: []int64{4, 0}, SentBytes: []int64{640, 0}, ReceivedBytes: []int64{0, 512}, ConnectP50: time.Millisecond, ConnectP99: 2 * time.Millisecond, ConnectMax: 3 * time.Millisecond,
		Thresholds: []Threshold{{Expr: "p99 < 10ms", Pass: true}, {Expr: "lost == 0", Pass: false}}})
	return x
}

// TestExporterRunLabels: every series carries the run's run_id; the run
// and build info say the plan, the broker and the mqplan; the figures
// known at the end are served after Finish.
func TestExporterRunLabels(t *testing.T) {
	srv := httptest.NewServer(finishedExporter(t).Handler())
	defer srv.Close()
	fams := scrape(t, srv.URL)
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			if labelOf(m, "run_id") != "r-1" {
				t.Errorf("%s%v: run_id %q, want r-1", name, m.GetLabel(), labelOf(m, "run_id"))
			}
		}
	}
	tests := []struct {
		name   string
		metric string
		labels []string
		want   float64
	}{
		{"run info", "mqplan_run_info", []string{"plan", "plans/p.yaml", "broker", "mqtts://user:***@127.0.0.1:8883"}, 1},
		{"build info", "mqplan_build_info", []string{"version", "v0.0.0", "goversion", runtime.Version(), "revision", "abc"}, 1},
		{"unsent", "mqplan_messages_unsent", []string{"group", "pub"}, 4},
		{"bytes sent", "mqplan_payload_sent_bytes_total", []string{"group", "pub"}, 640},
		{"bytes received", "mqplan_payload_received_bytes_total", []string{"group", "sub"}, 512},
		{"connect p99", "mqplan_connect_latency_seconds", []string{"stat", "p99"}, 0.002},
		{"threshold passed", "mqplan_threshold_passed", []string{"threshold", "p99 < 10ms"}, 1},
		{"threshold failed", "mqplan_threshold_passed", []string{"threshold", "lost == 0"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := sample(fams, tt.metric, tt.labels...)
			if !ok || got != tt.want {
				t.Errorf("%s%v = %v (present %v), want %v", tt.metric, tt.labels, got, ok, tt.want)
			}
		})
	}
}

// labelOf is m's label name's value, "" when it has none.
func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestExporterPromtool: Prometheus' own promtool finds nothing to say
// about a scrape of a finished run (skipped outside CI when promtool is
// not installed; .ci/run installs it with Debian's prometheus package).
func TestExporterPromtool(t *testing.T) {
	srv := httptest.NewServer(finishedExporter(t).Handler())
	defer srv.Close()
	promtoolCheck(t, srv.URL)
}

// promtoolCheck runs `promtool check metrics` on a scrape of url and
// fails the test on anything it says (skipped outside CI when promtool is
// not installed; .ci/run installs it with Debian's prometheus package).
func promtoolCheck(t *testing.T, url string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed (Debian: apt-get install prometheus); CI must run this check")
		}
		t.Skip("promtool is not installed (Debian: apt-get install prometheus)")
	}
	resp := get(t, url, "text/plain;version=0.0.4")
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
