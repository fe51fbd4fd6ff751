package report

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/golden"
	"github.com/mqplan/mqplan/plans"
)

func explainProgram(t *testing.T, broker []string, sources []string, clients int) *plans.Program {
	t.Helper()
	p := &plans.Plan{
		File: "x.yaml", Name: "x",
		Broker: plans.Broker{URLs: broker, Protocol: 5, ConnectTimeout: time.Second, SourceAddresses: sources},
		Groups: []plans.Group{
			{Name: "sub", Count: clients, Start: 1, ConnectRate: 1000, Subscribe: []plans.Subscription{{Topic: plans.MustTemplate("t/%i"), QoS: 1}}},
			{Name: "pub", Count: clients, Start: 1, ConnectRate: 1000, Publish: &plans.Publish{Topic: plans.MustTemplate("t/%i"), QoS: 1, Size: 100, Every: time.Second}},
		},
		Duration: 10 * time.Second,
		Drain:    time.Second,
	}
	prog, err := plans.Compile(p, plans.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

func TestExplainNeedsAndWarnings(t *testing.T) {
	tests := []struct {
		name     string
		broker   []string
		sources  []string
		clients  int
		limits   Limits
		fds      int
		ports    int
		warnings []string
	}{
		{
			name: "embedded broker holds both ends", broker: []string{plans.Embedded}, clients: 100,
			limits: Limits{OpenFiles: 20000, EphemeralPorts: 28232}, fds: 400 + descriptorSlack, ports: 200,
		},
		{
			name: "too many files", broker: []string{plans.Embedded}, clients: 6000,
			limits: Limits{OpenFiles: 20000, EphemeralPorts: 28232}, fds: 24000 + descriptorSlack, ports: 12000,
			warnings: []string{"needs 24032 file descriptors but the open-file limit is 20000"},
		},
		{
			name: "too many ports from one address", broker: []string{"mqtt://127.0.0.1:1883"}, clients: 15000,
			limits: Limits{OpenFiles: 1 << 20, EphemeralPorts: 28232}, fds: 30000 + descriptorSlack, ports: 30000,
			warnings: []string{"needs 30000 local ports", "add broker.source_addresses"},
		},
		{
			name: "source addresses spread the ports", broker: []string{"mqtt://127.0.0.1:1883"}, sources: []string{"127.0.0.2", "127.0.0.3"}, clients: 15000,
			limits: Limits{OpenFiles: 1 << 20, EphemeralPorts: 28232}, fds: 30000 + descriptorSlack, ports: 15000,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog := explainProgram(t, tt.broker, tt.sources, tt.clients)
			n := ComputeNeeds(prog)
			if n.FileDescriptors != tt.fds || n.PortsPerAddress != tt.ports {
				t.Errorf("needs %+v, want %d fds and %d ports", n, tt.fds, tt.ports)
			}
			var b strings.Builder
			if err := WriteExplain(&b, prog, tt.limits); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, w := range tt.warnings {
				if !strings.Contains(out, w) {
					t.Errorf("explain lacks %q:\n%s", w, out)
				}
			}
			if len(tt.warnings) == 0 && strings.Contains(out, "WARNING") {
				t.Errorf("unexpected warning:\n%s", out)
			}
			if !strings.Contains(out, "steady") || !strings.Contains(out, "peak connections") {
				t.Errorf("explain output:\n%s", out)
			}
		})
	}
}

// TestExplainStages checks explain's stage table for a staged plan: each
// stage's window, every publishing group's rate across it and its exact
// messages and deliveries.
// The burst plan's golden shows its group's bursts and the whole bursts
// each phase counts.
// The shipped 1to1-qos1 plan's golden shows a warmup and a ramp rising
// together in the rate chart; rates_sizes', a ramp without warmup.
func TestExplainStages(t *testing.T) {
	paths := map[string]string{"1to1-qos1": "../plans/1to1-qos1.yaml"}
	for _, name := range []string{"stages", "burst", "group_stages", "1to1-qos1", "rates_sizes"} {
		t.Run(name, func(t *testing.T) {
			path := paths[name]
			if path == "" {
				path = "../testdata/plans/valid/" + name + ".yaml"
			}
			p, err := plans.Load(path, plans.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			prog, err := plans.Compile(p, plans.CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := WriteExplain(&b, prog, Limits{OpenFiles: 1024, EphemeralPorts: 28232}); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(goldenDir, "explain-"+name+".txt"), []byte(b.String()))
		})
	}
}
