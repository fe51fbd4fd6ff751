package live

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs url as Prometheus does (text format) and parses the answer
// with Prometheus' own text parser.
func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

// sample is the value of family name's series with exactly these labels
// (name=value pairs); ok is false when there is no such series.
func sample(fams map[string]*dto.MetricFamily, name string, labels ...string) (v float64, ok bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel())*2 != len(labels) {
			continue
		}
		for i, l := range m.GetLabel() {
			if l.GetName() != labels[2*i] || l.GetValue() != labels[2*i+1] {
				continue next
			}
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
			on = append(on, m.GetLabel()[0].GetValue())
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
		want    map[string]float64 // "name group" -> value; NaN for NaN
		phase   string
	}{
		{name: "before the first second everything is zero and no phase is on",
			want: map[string]float64{"mqplan_messages_sent_total pub": 0, "mqplan_messages_received_total sub": 0,
				"mqplan_clients_connected sub": 0, "mqplan_latency_seconds sub 1": math.NaN()},
		},
		{name: "counters add up the seconds and gauges hold the last",
			seconds: []stats.Second{sec(phase.Connect, quiet, quiet), sec(phase.Steady, pubSec, subSec), sec(phase.Steady, pubSec, subSec)},
			phase:   "steady",
			want: map[string]float64{
				"mqplan_messages_sent_total pub": 200, "mqplan_messages_acked_total pub": 196,
				"mqplan_errors_total pub": 2, "mqplan_messages_sent_total sub": 0,
				"mqplan_messages_received_total sub": 500, "mqplan_messages_duplicated_total sub": 4,
				"mqplan_disconnects_total sub": 2, "mqplan_clients_connected sub": 3, "mqplan_clients_down sub": 1,
				"mqplan_clients_connected pub":   2,
				"mqplan_latency_seconds sub 0.5": 0.0005, "mqplan_latency_seconds sub 0.99": 0.002,
				"mqplan_latency_seconds sub 1":    0.003,
				"mqplan_latency_seconds pub 0.99": math.NaN(),
			}},
		{name: "a second without deliveries makes the latency NaN, not stale",
			seconds: []stats.Second{sec(phase.Steady, pubSec, subSec), sec(phase.Drain, quiet, quiet)},
			phase:   "drain",
			want: map[string]float64{"mqplan_latency_seconds sub 0.5": math.NaN(), "mqplan_messages_received_total sub": 250,
				"mqplan_clients_connected sub": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := New([]string{"pub", "sub"})
			for _, s := range tt.seconds {
				x.Observe(s)
			}
			srv := httptest.NewServer(x.Handler())
			defer srv.Close()
			fams := scrape(t, srv.URL)
			for key, want := range tt.want {
				f := strings.Fields(key)
				labels := []string{"group", f[1]}
				if len(f) == 3 {
					labels = append(labels, "quantile", f[2])
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
	x := New([]string{"ok", "bad\xff"})
	rec := httptest.NewRecorder()
	x.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "UTF-8") {
		t.Fatalf("status %d body %q, want 500 naming the invalid label value", rec.Code, rec.Body.String())
	}
}

// histogram is family name's histogram for group, nil when absent.
func histogram(fams map[string]*dto.MetricFamily, name, group string) *dto.Histogram {
	for _, m := range fams[name].GetMetric() {
		if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == group {
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

// TestExporterLatencyHistogram: the latencies given with ObserveLatency
// appear in mqplan_e2e_latency_seconds when Observe takes their second,
// in the buckets their values fall in, cumulative, with their count and
// sum; a group that received nothing has an empty histogram.
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
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := New([]string{"pub", "sub"})
			x.ObserveLatency(1, h)
			x.ObserveLatency(7, h) // no such group: ignored
			for range tt.seconds {
				x.Observe(stats.Second{Groups: make([]stats.GroupSecond, 2)})
			}
			srv := httptest.NewServer(x.Handler())
			defer srv.Close()
			fams := scrape(t, srv.URL)
			sub := histogram(fams, "mqplan_e2e_latency_seconds", "sub")
			pub := histogram(fams, "mqplan_e2e_latency_seconds", "pub")
			if sub == nil || pub == nil {
				t.Fatalf("no histogram for each group: %v", fams["mqplan_e2e_latency_seconds"])
			}
			if pub.GetSampleCount() != 0 {
				t.Errorf("pub received nothing, its histogram counts %d", pub.GetSampleCount())
			}
			if sub.GetSampleCount() != tt.count {
				t.Errorf("count %d, want %d", sub.GetSampleCount(), tt.count)
			}
			if math.Abs(sub.GetSampleSum()-tt.sumAround) > tt.sumAround/100 {
				t.Errorf("sum %v, want about %v", sub.GetSampleSum(), tt.sumAround)
			}
			got := bucketCounts(sub)
			if len(got) != len(latencyBuckets)+1 || got[math.Inf(1)] != tt.count {
				t.Errorf("%d buckets, +Inf %d: want %d and the count", len(got), got[math.Inf(1)], len(latencyBuckets)+1)
			}
			for le, want := range tt.buckets {
				if got[le] != want {
					t.Errorf("bucket le=%v counts %d, want %d (all: %v)", le, got[le], want, got)
				}
			}
		})
	}
}
