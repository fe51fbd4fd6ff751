package live

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/promtest"
	"github.com/mqplan/mqplan/internal/wait"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

// dashboardDoc is what the tests read of the dashboard.
type dashboardDoc struct {
	Inputs []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
	Requires []struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	} `json:"__requires"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title       string `json:"title"`
		Type        string `json:"type"`
		FieldConfig struct {
			Defaults struct {
				Unit string `json:"unit"`
			} `json:"defaults"`
		} `json:"fieldConfig"`
		Targets []struct {
			RefID  string `json:"refId"`
			Expr   string `json:"expr"`
			Legend string `json:"legendFormat"`
		} `json:"targets"`
	} `json:"panels"`
}

// readDashboard decodes the shipped dashboard, and the same as a generic
// value.
func readDashboard(t *testing.T) (*dashboardDoc, any) {
	t.Helper()
	data, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboardDoc
	var all any
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboard, err)
	}
	if err := json.Unmarshal(data, &all); err != nil {
		t.Fatal(err)
	}
	return &d, all
}

// datasources walks v and returns every "datasource" object's uid.
func datasources(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if ds, ok := x.(map[string]any); ok && k == "datasource" {
				uid, _ := ds["uid"].(string)
				*out = append(*out, uid)
			}
			datasources(x, out)
		}
	case []any:
		for _, x := range v {
			datasources(x, out)
		}
	}
}

// TestDashboardImports: the dashboard imports as Grafana's export of it
// would: the data source input it declares is the one every panel,
// query and variable uses; __requires names Grafana, the Prometheus data
// source and exactly the panel types used; the job, instance, run and
// group variables exist and every panel query filters on all of them;
// message rates are in msg/s.
func TestDashboardImports(t *testing.T) {
	d, all := readDashboard(t)
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].Type != "datasource" || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("__inputs %+v: want the one Prometheus data source DS_PROMETHEUS", d.Inputs)
	}
	var uids []string
	datasources(all, &uids)
	if len(uids) < len(d.Panels) {
		t.Errorf("%d data source references for %d panels", len(uids), len(d.Panels))
	}
	for _, uid := range uids {
		if uid != "${DS_PROMETHEUS}" {
			t.Errorf("a data source reference is %q, not the declared input ${DS_PROMETHEUS}", uid)
		}
	}
	requires := map[string]bool{}
	for _, r := range d.Requires {
		requires[r.Type+" "+r.ID] = true
	}
	used := map[string]bool{"grafana grafana": true, "datasource prometheus": true}
	for _, p := range d.Panels {
		used["panel "+p.Type] = true
	}
	for k := range used {
		if !requires[k] {
			t.Errorf("__requires lacks %s", k)
		}
	}
	for k := range requires {
		if !used[k] {
			t.Errorf("__requires has %s, which the dashboard does not use", k)
		}
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	if !slices.Equal(vars, []string{"job", "instance", "run_id", "group"}) {
		t.Errorf("variables %v, want job, instance, run_id, group", vars)
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, v := range []string{`job=~"$job"`, `instance=~"$instance"`, `run_id=~"$run_id"`} {
				if !strings.Contains(tg.Expr, v) {
					t.Errorf("panel %q %s: %q does not filter on %s", p.Title, tg.RefID, tg.Expr, v)
				}
			}
			if strings.Contains(tg.Expr, "rate(mqplan_messages_") && p.FieldConfig.Defaults.Unit != "suffix: msg/s" {
				t.Errorf("panel %q shows a message rate in unit %q, want \"suffix: msg/s\"", p.Title, p.FieldConfig.Defaults.Unit)
			}
		}
	}
}

// onlyGroup says which group of dashboardRun a panel's query may show
// (by "panel title/refId"): the receiving group's figures leave out the
// publishing group, and the other way round; a query not listed may show
// both.
var onlyGroup = map[string]string{
	"Send rate/A":                       "pub",
	"Receive rate/A":                    "sub",
	"Latency (last second)/A":           "sub",
	"Latency distribution (p50, p99)/A": "sub",
	"Latency distribution (p50, p99)/B": "sub",
	"Acks and duplicates/A":             "pub",
	"Acks and duplicates/B":             "sub",
	"Deliveries lost so far/A":          "sub",
	"Ack latency (p50, p99)/A":          "pub",
	"Ack latency (p50, p99)/B":          "pub",
	"Unsent messages (end of run)/A":    "pub",
	"Payload bytes (end of run)/A":      "pub",
	"Payload bytes (end of run)/B":      "sub",
}

// labelValues is a variable's label_values(SELECTOR, LABEL) query.
var labelValues = regexp.MustCompile(`^label_values\((.+), ([a-z_]+)\)$`)

// TestDashboardQueriesOnPrometheus: every panel query and variable of
// the dashboard, its variables substituted as Grafana would, answers
// with series from a real Prometheus holding a run's pushed metrics, and
// a publishing group's empty receive figures (and the other way round)
// are not among them.
func TestDashboardQueriesOnPrometheus(t *testing.T) {
	prom := promtest.Start(t)
	d, _ := readDashboard(t)
	runID := dashboardRun(t, prom.WriteURL)
	vars := strings.NewReplacer(`"$job"`, `".*"`, `"$instance"`, `".*"`, `"$group"`, `".*"`,
		`"$run_id"`, fmt.Sprintf("%q", runID), "$__rate_interval", "1m")
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			key := p.Title + "/" + tg.RefID
			t.Run(key, func(t *testing.T) {
				q := vars.Replace(tg.Expr)
				got := prom.Query(t, q)
				if len(got) == 0 {
					t.Fatalf("%s: no series", q)
				}
				for _, s := range got {
					if g, only := s.Labels["group"], onlyGroup[key]; only != "" && g != only {
						t.Errorf("%s: a series for group %q (%v), want only %q's", q, g, s.Value, only)
					}
					if s.Labels["run_id"] != "" && s.Labels["run_id"] != runID {
						t.Errorf("%s: a series of run %q", q, s.Labels["run_id"])
					}
				}
			})
		}
	}
	for _, v := range d.Templating.List {
		t.Run("variable "+v.Name, func(t *testing.T) {
			m := labelValues.FindStringSubmatch(v.Definition)
			if m == nil {
				t.Fatalf("%q is not label_values(SELECTOR, LABEL)", v.Definition)
			}
			got := prom.LabelValues(t, m[2], vars.Replace(m[1]))
			sort.Strings(got)
			want := map[string][]string{"job": {"mqplan"}, "run_id": {runID}, "group": {"pub", "sub"}}[v.Name]
			if len(got) == 0 || want != nil && !slices.Equal(got, want) {
				t.Errorf("%s: %v, want %v", v.Definition, got, want)
			}
		})
	}
}

// dashboardRun pushes a short run of two groups, pub publishing at QoS 1
// and sub receiving, to the remote-write receiver at url, three times, a
// second's figures added between pushes, then its end; it returns the
// run's id.
func dashboardRun(t *testing.T, url string) string {
	t.Helper()
	const runID = "dash-1"
	x := New([]string{"pub", "sub"}, Info{RunID: runID, Plan: "p.yaml", Broker: "mqtt://127.0.0.1:1883", Thresholds: []string{"p99 < 10ms"}})
	p, err := NewPusher(url, url, x)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	last := int64(0)
	for i := range 3 {
		h := stats.NewHistogram()
		if err := h.RecordValues(int64(1000+500*i), 50); err != nil {
			t.Fatal(err)
		}
		x.ObserveLatency(1, h)
		x.ObserveAck(0, h)
		x.Observe(stats.Second{Phase: phase.Steady, Groups: []stats.GroupSecond{
			{Group: "pub", Connected: 1, Sent: 50, Acked: 50},
			{Group: "sub", Connected: 1, Received: 50, Duplicates: 1, P50: time.Millisecond, P99: 2 * time.Millisecond, Max: 3 * time.Millisecond}}})
		if i == 2 {
			x.Finish(Final{Unsent: []int64{3, 0}, SentBytes: []int64{9600, 0}, ReceivedBytes: []int64{0, 9600}, ConnectP50: time.Millisecond, ConnectP99: time.Millisecond, ConnectMax: time.Millisecond,
				Thresholds: []Threshold{{Expr: "p99 < 10ms", Pass: true}}})
		}
		// Each push must have a timestamp of its own: Prometheus
		// refuses a second value at the same millisecond.
		wait.Until(t, "the clock to pass the last push's millisecond", func() bool { return time.Now().UnixMilli() > last })
		if err := p.Push(ctx); err != nil {
			t.Fatal(err)
		}
		last = time.Now().UnixMilli()
	}
	return runID
}
