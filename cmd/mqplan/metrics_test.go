package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/loopback"
	await "github.com/mqplan/mqplan/internal/wait"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/report"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrapeMetrics GETs a /metrics endpoint in the text format and parses it
// with Prometheus' own text parser.
func scrapeMetrics(url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(resp.Body)
}

// groupValue is family name's value for group (a counter or a gauge).
func groupValue(fams map[string]*dto.MetricFamily, name, group string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		if labelValue(m, "group") == group {
			if c := m.GetCounter(); c != nil {
				return c.GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// labelValue is m's label name's value, "" when it has none.
func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// onPhase is the phase whose mqplan_phase gauge is 1 ("" for none).
func onPhase(fams map[string]*dto.MetricFamily) string {
	var on []string
	for _, m := range fams["mqplan_phase"].GetMetric() {
		if m.GetGauge().GetValue() == 1 {
			on = append(on, labelValue(m, "phase"))
		}
	}
	return strings.Join(on, "+")
}

// TestMetricsListen scrapes `run --metrics-listen` during a real run: the
// counters rise, every scraped count is exactly the sum of the first
// seconds of the timeline the run saved (so the endpoint is fed from the
// run's own figures, none lost or counted twice), the phase gauge goes
// forward from warmup to steady, the ack latency histogram and the
// lost-so-far gauge are fed too (acks counted, nothing lost), and the
// endpoint is gone when the command has returned.
func TestMetricsListen(t *testing.T) {
	t.Parallel()
	addr := loopback.FreeAddr(t)
	url := "http://" + addr + "/metrics"
	saved := filepath.Join(t.TempDir(), "result.json")
	cmd := startCmd(t, "run", "--metrics-listen", addr, "--out", "json="+saved,
		"--set", "warmup=2s", "--set", "duration=3s", "testdata/cli/pass.yaml")

	var phases []string
	var sent, received []float64 // each scrape's pub sent and sub received
	var acks uint64              // the most pub's ack latency histogram counted
	var lost []float64           // each scrape's sub lost so far
	await.Until(t, "the steady phase with counts rising on "+url, func() bool {
		fams, err := scrapeMetrics(url)
		if err != nil {
			return false // not listening yet, or between scrapes
		}
		if ph := onPhase(fams); len(phases) == 0 || phases[len(phases)-1] != ph {
			phases = append(phases, ph)
		}
		s, okS := groupValue(fams, "mqplan_messages_sent_total", "pub")
		r, okR := groupValue(fams, "mqplan_messages_received_total", "sub")
		if !okS || !okR {
			t.Fatalf("no per-group counters at %s", url)
		}
		if len(sent) == 0 || sent[len(sent)-1] != s || received[len(received)-1] != r {
			sent, received = append(sent, s), append(received, r)
		}
		for _, m := range fams["mqplan_ack_latency_seconds"].GetMetric() {
			if labelValue(m, "group") == "pub" {
				acks = max(acks, m.GetHistogram().GetSampleCount())
			}
		}
		l, ok := groupValue(fams, "mqplan_messages_lost", "sub")
		if !ok {
			t.Fatalf("no mqplan_messages_lost for group sub at %s", url)
		}
		lost = append(lost, l)
		rises := 0
		for i := 1; i < len(sent); i++ {
			if sent[i] > sent[i-1] {
				rises++
			}
		}
		return slices.Contains(phases, "steady") && rises >= 2
	})
	if code := cmd.wait(t, time.Minute); code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, cmd.stderr.String())
	}
	<-cmd.done
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("%s still listens after the command returned", addr)
	}

	// Phases go forward: "" (before the first second), then the run's.
	var seen []phase.Phase
	for _, name := range phases {
		if name == "" {
			continue
		}
		p, ok := phase.Parse(name)
		if !ok {
			t.Fatalf("phase gauge shows %q", name)
		}
		if len(seen) > 0 && p <= seen[len(seen)-1] {
			t.Errorf("phase gauge went %q: not forward", phases)
		}
		seen = append(seen, p)
	}
	if !slices.Contains(seen, phase.Warmup) || !slices.Contains(seen, phase.Steady) {
		t.Errorf("phase gauge went %q, want warmup then steady", phases)
	}

	// Every scraped count is a prefix sum of the saved timeline.
	res := savedResult(t, saved)
	prefixSent, prefixRecv := []float64{0}, []float64{0}
	for _, s := range res.Timeline {
		var pub, sub float64
		for _, g := range s.Groups {
			switch g.Group {
			case "pub":
				pub = float64(g.Sent)
			case "sub":
				sub = float64(g.Received)
			}
		}
		prefixSent = append(prefixSent, prefixSent[len(prefixSent)-1]+pub)
		prefixRecv = append(prefixRecv, prefixRecv[len(prefixRecv)-1]+sub)
	}
	for i := range sent {
		if !slices.Contains(prefixSent, sent[i]) || !slices.Contains(prefixRecv, received[i]) {
			t.Errorf("scrape %d: pub sent %v, sub received %v: not the sums of the first seconds of the run's timeline (%v, %v)",
				i, sent[i], received[i], prefixSent, prefixRecv)
		}
	}
	if last := prefixSent[len(prefixSent)-1]; sent[len(sent)-1] > last || last == 0 {
		t.Errorf("scraped %v sent, the run sent %v", sent[len(sent)-1], last)
	}
	if acks == 0 {
		t.Errorf("mqplan_ack_latency_seconds{group=\"pub\"} counted no ack of a QoS 1 run")
	}
	if slices.ContainsFunc(lost, func(v float64) bool { return v != 0 }) {
		t.Errorf("mqplan_messages_lost{group=\"sub\"} went %v on a broker that loses nothing", lost)
	}
}

// TestMetricsListenChecked: an endpoint that cannot listen is exit 2
// before anything connects; a bare port is loopback and said so; a
// wildcard address is allowed but said on stderr.
func TestMetricsListenChecked(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := loopback.FreePort(t)
	tests := []struct {
		name       string
		addr       string
		code       int
		stderrHas  string
		stderrLack string
	}{
		{name: "port in use", addr: busy.Addr().String(), code: 2,
			stderrHas: "--metrics-listen: listen on " + busy.Addr().String()},
		{name: "not an address", addr: "9464", code: 2, stderrHas: "--metrics-listen: \"9464\" is not HOST:PORT"},
		{name: "bare port is loopback", addr: fmt.Sprintf(":%d", port), code: 0,
			stderrHas: fmt.Sprintf("Prometheus metrics at http://127.0.0.1:%d/metrics", port), stderrLack: "reachable from other machines"},
		{name: "wildcard is said", addr: "0.0.0.0:0", code: 0, stderrHas: "is reachable from other machines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, "run", "--metrics-listen", tt.addr, "testdata/cli/pass.yaml")
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderrHas) ||
				tt.stderrLack != "" && strings.Contains(r.stderr, tt.stderrLack) {
				t.Fatalf("exit %d, want %d; stderr should have %q (and not %q):\n%s", r.code, tt.code, tt.stderrHas, tt.stderrLack, r.stderr)
			}
			if tt.code == 2 && strings.Contains(r.stdout+r.stderr, "PASS") {
				t.Errorf("a refused endpoint still ran the plan:\n%s", r.stdout)
			}
		})
	}
}

// TestMetricsLinger: with --metrics-linger the endpoint outlives the
// report, serving the run's final figures (each counter the sum of the
// whole saved timeline), so that a scraper whose interval is longer than
// the run's last second still sees them; a stop signal ends the wait at
// once, whether the run ended by itself or was interrupted first, with
// the run's exit code and no "exiting without a report"; a short linger
// ends by itself.
func TestMetricsLinger(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		linger string
		// interrupt stops the run with a first signal in its steady phase.
		interrupt bool
		// signal ends the wait (else it ends by itself).
		signal bool
		code   int
	}{
		{name: "a signal ends the wait", linger: "10m", signal: true, code: 0},
		{name: "an interrupted run lingers too; a second signal ends the wait", linger: "10m", interrupt: true, signal: true, code: 3},
		{name: "the wait ends by itself", linger: "1s", code: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := loopback.FreeAddr(t)
			url := "http://" + addr + "/metrics"
			saved := filepath.Join(t.TempDir(), "result.json")
			duration := "1s"
			if tt.interrupt {
				duration = "30s"
			}
			cmd := startCmd(t, "run", "--metrics-listen", addr, "--metrics-linger", tt.linger, "--out", "json="+saved,
				"--set", "duration="+duration, "testdata/cli/pass.yaml")
			if tt.interrupt {
				await.Until(t, "the steady phase on "+url, func() bool {
					fams, err := scrapeMetrics(url)
					return err == nil && onPhase(fams) == "steady"
				})
				cmd.signal(t, os.Interrupt)
			}
			await.Until(t, "the report, then the linger said on stderr", func() bool {
				return strings.Contains(cmd.stderr.String(), "mqplan: serving the final metrics for "+tt.linger)
			})
			if !tt.signal {
				if code := cmd.wait(t, time.Minute); code != tt.code {
					t.Fatalf("exit %d, want %d:\n%s", code, tt.code, cmd.stderr.String())
				}
				return
			}
			// The report is written: the endpoint serves its figures.
			fams, err := scrapeMetrics(url)
			if err != nil {
				t.Fatalf("after the report: %v", err)
			}
			res := savedResult(t, saved)
			var sent, received int64
			for _, s := range res.Timeline {
				for _, g := range s.Groups {
					switch g.Group {
					case "pub":
						sent += g.Sent
					case "sub":
						received += g.Received
					}
				}
			}
			if v, _ := groupValue(fams, "mqplan_messages_sent_total", "pub"); v != float64(sent) || sent == 0 {
				t.Errorf("lingering: pub sent %v, the run's %d", v, sent)
			}
			if v, _ := groupValue(fams, "mqplan_messages_received_total", "sub"); v != float64(received) || received == 0 {
				t.Errorf("lingering: sub received %v, the run's %d", v, received)
			}
			select {
			case <-cmd.done:
				t.Fatalf("the command returned during a 10m linger:\n%s", cmd.stderr.String())
			default:
			}
			cmd.signal(t, os.Interrupt)
			if code := cmd.wait(t, 30*time.Second); code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tt.code, cmd.stderr.String())
			}
			<-cmd.done
			if strings.Contains(cmd.stderr.String(), "without a report") {
				t.Errorf("the signal that ended the wait was taken for a second interrupt of the run:\n%s", cmd.stderr.String())
			}
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				t.Errorf("%s still listens after the command returned", addr)
			}
		})
	}
}

// TestMetricsLingerChecked: --metrics-linger out of bounds, or without
// an endpoint, is exit 2 before anything connects.
func TestMetricsLingerChecked(t *testing.T) {
	addr := loopback.FreeAddr(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"negative", []string{"--metrics-listen", addr, "--metrics-linger", "-1s"}, "--metrics-linger -1s: a duration of 0 or more"},
		{"beyond the bound", []string{"--metrics-listen", addr, "--metrics-linger", "11m"}, "--metrics-linger 11m0s: at most 10m0s"},
		{"no endpoint", []string{"--metrics-linger", "30s"}, "--metrics-linger 30s: there is no endpoint to keep serving without --metrics-listen"},
		{"not a duration", []string{"--metrics-listen", addr, "--metrics-linger", "soon"}, `--metrics-linger "soon": want a duration like 30s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, append(append([]string{"run"}, tt.args...), "testdata/cli/pass.yaml")...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, want 2 with %q:\n%s", r.code, tt.want, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, "PASS") {
				t.Errorf("the plan ran:\n%s", r.stdout)
			}
		})
	}
}

// TestMetricsLostDuringOutage: the broker goes away in the middle of the
// steady phase (closed, as a broker killed would be) while a run scrapes
// its live metrics: mqplan_messages_lost rises while the run is still in
// its steady phase, from the messages the cut-off publishers never get
// to send, not only when the run is over; lingering after the report, it
// is the run's lost deliveries exactly (no warmup or ramp: every
// publishing second is steady, whose lost the saved result holds).
func TestMetricsLostDuringOutage(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(5 * time.Second) })
	addr := loopback.FreeAddr(t)
	url := "http://" + addr + "/metrics"
	saved := filepath.Join(t.TempDir(), "result.json")
	cmd := startCmd(t, "run", "--broker", b.URL(), "--metrics-listen", addr, "--metrics-linger", "10m", "--out", "json="+saved,
		"--set", "warmup=0s", "--set", "duration=6s", "--set", "drain=1s", "testdata/cli/pass.yaml")
	await.Until(t, "messages sent in the steady phase on "+url, func() bool {
		fams, err := scrapeMetrics(url)
		if err != nil {
			return false
		}
		sent, _ := groupValue(fams, "mqplan_messages_sent_total", "pub")
		return onPhase(fams) == "steady" && sent > 0
	})
	if err := b.Close(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	var liveLost float64
	var seen []string
	await.Until(t, "lost so far above 0 in the steady phase, or the steady phase over", func() bool {
		fams, err := scrapeMetrics(url)
		if err != nil {
			return false
		}
		lost, _ := groupValue(fams, "mqplan_messages_lost", "sub")
		ph := onPhase(fams)
		if s := fmt.Sprintf("%s:%v", ph, lost); len(seen) == 0 || seen[len(seen)-1] != s {
			seen = append(seen, s)
		}
		if ph == "steady" && lost > 0 {
			liveLost = lost
			return true
		}
		return ph != "steady"
	})
	if liveLost == 0 {
		t.Errorf("mqplan_messages_lost{group=\"sub\"} stayed 0 through the steady phase after the broker went away: %v", seen)
	}
	await.Until(t, "the report, then the linger said on stderr", func() bool {
		return strings.Contains(cmd.stderr.String(), "mqplan: serving the final metrics")
	})
	fams, err := scrapeMetrics(url)
	if err != nil {
		t.Fatal(err)
	}
	final, _ := groupValue(fams, "mqplan_messages_lost", "sub")
	data, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Metrics struct {
			Groups map[string]map[string]any `json:"groups"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	want, _ := doc.Metrics.Groups["sub"]["lost"].(float64)
	if final != want || final < liveLost || want == 0 {
		t.Errorf("mqplan_messages_lost{group=\"sub\"} = %v when the run is over (%v while it went), the run lost %v", final, liveLost, want)
	}
	cmd.signal(t, os.Interrupt)
	if code := cmd.wait(t, 30*time.Second); code != 1 && code != 3 {
		t.Errorf("exit %d, want 1 or 3 for a run that lost its broker:\n%s", code, cmd.stderr.String())
	}
	t.Logf("scrapes after the outage: %v; lost %v", seen, final)
}

// savedResult reads back the JSON result a run saved at path.
func savedResult(t *testing.T, path string) *report.Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := report.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
