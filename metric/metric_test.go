package metric

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestMetricsCatalogue(t *testing.T) {
	// Every name of plan-format.md, "Metrics that thresholds can use".
	want := []string{"sent", "acked", "expected", "received", "lost", "loss_rate", "duplicates", "dup_rate",
		"out_of_order", "ooo_rate", "corrupted", "send_rate", "recv_rate", "sent_bytes", "received_bytes",
		"connect.attempts", "connect.ok", "connect.failed", "connect.mean", "connect.p50", "connect.p99", "connect.max",
		"subscribe.mean", "subscribe.p99", "subscribe.max", "errors", "disconnects", "reconnects", "churn.disconnects", "churn.reconnects", "churn.ambiguous", "churn.ambiguous_received",
		"lag.p99", "lag.max", "late_rate",
		"unsent", "lost_unsent", "lost_unacked", "lost_broker", "lost_late", "clients.lost", "overlap_copies", "qos_downgrades", "unexpected",
		"broker.cpu.max", "broker.cpu.mean", "broker.rss.max", "self.cpu.max", "self.rss.max",
		"broker.clients.max", "broker.publish.received", "broker.publish.sent", "broker.dropped", "broker.memory.max", "broker.subscriptions.max"}
	want = append(want, "requests", "responses_expected", "responses", "responses_late", "responses_duplicates", "responses_sent", "rtt.timeouts")
	want = append(want, "latency.cross_share", "clock.uncertainty", "clock.max_offset")
	want = append(want, "self.cpu_wait", "self.disturbed")
	for _, fam := range []string{"latency", "ack", "rtt", "latency_local", "latency_cross"} {
		for _, s := range []string{"min", "mean", "p50", "p90", "p95", "p99", "p999", "max", "stddev"} {
			want = append(want, fam+"."+s)
		}
	}
	seen := map[Name]bool{}
	for _, m := range All() {
		if seen[m.Name] {
			t.Errorf("metric %q listed twice", m.Name)
		}
		seen[m.Name] = true
		if m.Help == "" {
			t.Errorf("metric %q has no help", m.Name)
		}
	}
	for _, name := range want {
		if !seen[Name(name)] {
			t.Errorf("metric %q missing from the catalogue", name)
		}
	}
	if len(All()) != len(want) {
		t.Errorf("catalogue has %d metrics, plan-format.md lists %d", len(All()), len(want))
	}

	kinds := []struct {
		name string
		kind Kind
	}{
		{"sent", Count}, {"connect.failed", Count}, {"received_bytes", Count},
		{"recv_rate", Rate}, {"send_rate", Rate},
		{"loss_rate", Fraction}, {"late_rate", Fraction}, {"dup_rate", Fraction},
		{"broker.cpu.max", Rate}, {"self.cpu.max", Rate}, {"broker.rss.max", Count},
		{"latency.stddev", Duration}, {"latency_cross.p99", Duration}, {"latency.cross_share", Fraction}, {"clock.uncertainty", Duration}, {"ack.p999", Duration}, {"lag.max", Duration}, {"connect.p50", Duration},
		// Aliases resolve to the canonical entry.
		{"p99", Duration}, {"p50", Duration},
	}
	for _, k := range kinds {
		m, ok := Lookup(k.name)
		if !ok {
			t.Errorf("Lookup(%q) not found", k.name)
			continue
		}
		if m.Kind != k.kind {
			t.Errorf("Lookup(%q).Kind = %v, want %v", k.name, m.Kind, k.kind)
		}
	}
	for _, alias := range Aliases() {
		m, ok := Lookup(alias)
		if back, _ := Alias(m.Name); !ok || back != alias || m.Name != Name("latency."+alias) {
			t.Errorf("Lookup(%q) = %q, %v; want %q", alias, m.Name, ok, "latency."+alias)
		}
	}
	for _, bad := range []string{"", "p98", "latency", "latency.p98", "groups.sub.p99", "P99"} {
		if _, ok := Lookup(bad); ok {
			t.Errorf("Lookup(%q) found a metric", bad)
		}
	}
}

// TestCatalogueEditIsPrivate checks that All hands out a copy: a caller
// cannot rename a metric under the threshold checker.
func TestCatalogueEditIsPrivate(t *testing.T) {
	all := All()
	all[0].Name = "renamed"
	if m, ok := Lookup(string(Sent)); !ok || m.Name != Sent || All()[0].Name != Sent {
		t.Errorf("editing All's result changed the catalogue: %v %v", m, All()[0])
	}
}

func TestMembers(t *testing.T) {
	tests := []struct {
		name, family string
		want         []string
	}{
		{"latency", "latency", []string{"min", "mean", "p50", "p90", "p95", "p99", "p999", "max", "stddev", "cross_share"}},
		{"latency_cross", "latency_cross", []string{"min", "mean", "p50", "p90", "p95", "p99", "p999", "max", "stddev"}},
		{"connect mixes counts and durations", "connect", []string{"attempts", "ok", "failed", "mean", "p50", "p99", "max"}},
		{"one member", "clients", []string{"lost"}},
		{"a leaf is no family", "sent", nil},
		{"unknown", "bogus", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Members(tt.family); !slices.Equal(got, tt.want) {
				t.Errorf("Members(%q) = %q, want %q", tt.family, got, tt.want)
			}
		})
	}
}

// TestCatalogueMatchesDocs checks the name column of plan-format.md's
// metric table against the catalogue and its aliases, both ways, so that
// neither can gain a metric the other lacks.
func TestCatalogueMatchesDocs(t *testing.T) {
	data, err := os.ReadFile("../docs/plan-format.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "## Metrics that thresholds can use")
	if start < 0 {
		t.Fatal(`plan-format.md has no "Metrics that thresholds can use" section`)
	}
	section := text[start:]
	if end := strings.Index(section[3:], "\n#"); end >= 0 {
		section = section[:end+3]
	}
	code := regexp.MustCompile("`([^`]+)`")
	braces := regexp.MustCompile(`^([a-z_]+)\.\{(.*)\}$`)
	var members []string // latency's, for "ack.{...same...}"
	documented := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.Contains(cells[1], "`") {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			name := m[1]
			if strings.HasPrefix(name, "groups.") || strings.HasPrefix(name, "phases.") || strings.HasPrefix(name, "stages.") || strings.HasPrefix(name, "stages[") {
				continue // scopes, not metrics
			}
			b := braces.FindStringSubmatch(name)
			if b == nil {
				documented[name] = true
				continue
			}
			list := strings.Split(b[2], ",")
			if b[2] == "...same..." {
				list = members
			} else if members == nil {
				members = list
			}
			for _, s := range list {
				documented[b[1]+"."+s] = true
			}
		}
	}
	known := map[string]bool{}
	for _, m := range All() {
		known[string(m.Name)] = true
	}
	for _, a := range Aliases() {
		known[a] = true
	}
	for name := range documented {
		if !known[name] {
			t.Errorf("plan-format.md documents %q, which the catalogue lacks", name)
		}
	}
	for name := range known {
		if !documented[name] {
			t.Errorf("the catalogue has %q, which plan-format.md does not document", name)
		}
	}
}

// TestUnitsAndScopes checks the two properties thresholds type and scope
// by: which counts are bytes (a size literal compares with them), and
// which figures exist for the whole run only (never under groups. or
// phases.): the broker's and mqplan's processes and the broker's own
// counters, every broker.* and self.* metric, and a sharded run's
// clock.* (one figure for all its shards).
func TestUnitsAndScopes(t *testing.T) {
	bytes := []Name{SentBytes, ReceivedBytes, BrokerRSSMax, SelfRSSMax, BrokerMemoryMax}
	for _, m := range All() {
		wantBytes := slices.Contains(bytes, m.Name)
		if (m.Unit == Bytes) != wantBytes {
			t.Errorf("%s: unit %q, want bytes %v", m.Name, m.Unit, wantBytes)
		}
		if m.Unit == Bytes && m.Kind != Count {
			t.Errorf("%s: bytes must be a count (Go int), is a %s", m.Name, m.Kind)
		}
		fam, _, _ := m.Name.Split()
		if wantWhole := fam == "broker" || fam == "self" || fam == "clock"; m.WholeRun != wantWhole {
			t.Errorf("%s: WholeRun %v, want %v", m.Name, m.WholeRun, wantWhole)
		}
	}
	if Bytes.String() != "bytes" || NoUnit.String() != "" {
		t.Errorf("unit names: %q, %q", Bytes, NoUnit)
	}
}
