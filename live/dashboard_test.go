package live

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// dashboard is the Grafana dashboard shipped for the exporter.
const dashboard = "../deploy/grafana/mqplan.json"

// metricName finds the metric names a PromQL query uses.
var metricName = regexp.MustCompile(`\bmqplan_[a-zA-Z0-9_]+`)

// queries walks a decoded JSON value and returns every PromQL query in
// it: panel targets' "expr" and template variables' "query".
func queries(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "expr" || k == "query") {
				*out = append(*out, s)
			}
			queries(x, out)
		}
	case []any:
		for _, x := range v {
			queries(x, out)
		}
	}
}

// TestDashboardNamesServedMetrics: the shipped dashboard is a Grafana
// dashboard whose every panel queries Prometheus, every metric a query
// names is one the exporter serves, and every metric the exporter serves
// is shown by some panel.
func TestDashboardNamesServedMetrics(t *testing.T) {
	data, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			GridPos *struct {
				W, H int
			} `json:"gridPos"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboard, err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("%s: title %q uid %q and %d panels: not a dashboard", dashboard, d.Title, d.UID, len(d.Panels))
	}
	for _, p := range d.Panels {
		if p.Title == "" || p.Type == "" || p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 || len(p.Targets) == 0 {
			t.Errorf("panel %q (%s): needs a title, a type, a size and a query", p.Title, p.Type)
		}
		for _, tg := range p.Targets {
			if !metricName.MatchString(tg.Expr) {
				t.Errorf("panel %q: query %q names no mqplan metric", p.Title, tg.Expr)
			}
		}
	}

	var all any
	if err := json.Unmarshal(data, &all); err != nil {
		t.Fatal(err)
	}
	var qs []string
	queries(all, &qs)
	served := map[string]bool{}
	for _, m := range Metrics {
		served[m.Name] = true
	}
	used := map[string]bool{}
	series := map[string]string{} // a histogram's series → its family
	for _, m := range Metrics {
		if m.Type == "histogram" {
			// Queries name a histogram's series, not the family.
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				series[m.Name+suffix] = m.Name
			}
		}
	}
	for _, q := range qs {
		for _, name := range metricName.FindAllString(q, -1) {
			if family, ok := series[name]; ok {
				name = family
			}
			used[name] = true
			if !served[name] {
				t.Errorf("the dashboard queries %s (in %q), which the exporter does not serve", name, q)
			}
		}
	}
	var unused []string
	for name := range served {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("no panel shows %v", unused)
	}
	if !slices.ContainsFunc(qs, func(q string) bool { return strings.HasPrefix(q, "label_values(mqplan_messages_sent_total{") }) {
		t.Errorf("the group variable's query is gone: %v", qs)
	}
}

// TestDocsNameServedMetrics: docs/plan-format.md's table of live metrics
// has a row for every family the exporter serves, with its type, and no
// other; docs/outputs.md (the user's page on live metrics) names every
// family too.
func TestDocsNameServedMetrics(t *testing.T) {
	docs, err := os.ReadFile("../docs/plan-format.md")
	if err != nil {
		t.Fatal(err)
	}
	outputs, err := os.ReadFile("../docs/outputs.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(mqplan_[a-z0-9_]+)` \\| ([a-z]+) \\|")
	rows := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(docs), -1) {
		rows[m[1]] = m[2]
	}
	for _, m := range Metrics {
		if rows[m.Name] != m.Type {
			t.Errorf("docs/plan-format.md: %s's row says type %q, it is a %s", m.Name, rows[m.Name], m.Type)
		}
		delete(rows, m.Name)
		if !strings.Contains(string(outputs), "`"+m.Name) {
			t.Errorf("docs/outputs.md does not name %s", m.Name)
		}
	}
	for name := range rows {
		t.Errorf("docs/plan-format.md has a row for %s, which the exporter does not serve", name)
	}
}
