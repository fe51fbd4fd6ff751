package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/loopback"
	"github.com/mqplan/mqplan/plans"
)

// --source-addresses: IP literals, bounded, normalised as the plan's
// broker.source_addresses are.
func TestParseSourceAddresses(t *testing.T) {
	for _, tt := range []struct {
		name, in, wantErr string
		want              []string
	}{
		{name: "two addresses", in: "10.0.0.7,10.0.0.8", want: []string{"10.0.0.7", "10.0.0.8"}},
		{name: "spaces and IPv6", in: "127.0.0.2, ::1", want: []string{"127.0.0.2", "::1"}},
		{name: "a host name", in: "10.0.0.7,node-a", wantErr: `"node-a" is not an IP address`},
		{name: "an empty one", in: "10.0.0.7,", wantErr: `"" is not an IP address`},
		{name: "too many", in: strings.Repeat("10.0.0.1,", maxSourceAddresses) + "10.0.0.1", wantErr: "at most 1024"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSourceAddresses(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// bindSources gives a shard's own clients its addresses round-robin and
// leaves the other shards' clients alone.
func TestBindSources(t *testing.T) {
	plan, err := plans.LoadBytes("p.yaml", []byte("duration: 1s\ngroups:\n  - {name: s, count: 12, subscribe: {topic: t}}\n"), plans.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plan.Broker.SourceAddresses = []string{"127.0.0.9"}
	prog, err := plans.Compile(plan, plans.CompileOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := plans.Assign(prog, 3)
	if err != nil {
		t.Fatal(err)
	}
	bindSources(prog, a.Mask(1), []string{"10.0.0.1", "10.0.0.2"})
	used := map[string]int{}
	for c, owned := range a.Mask(1) {
		got := prog.Clients[c].SourceAddr
		if !owned {
			if got != "127.0.0.9" {
				t.Errorf("client %d of another shard bound to %s", c, got)
			}
			continue
		}
		used[got]++
	}
	if n := a.Counts()[1]; n < 2 || used["10.0.0.1"]+used["10.0.0.2"] != n || used["10.0.0.1"]-used["10.0.0.2"] > 1 {
		t.Errorf("shard 1's %d clients bound %v, want both addresses in turn", n, used)
	}
}

// --source-addresses reaches the dialer of a shard's clients: an address
// this machine has connects, one it does not have fails every connect.
// Where the connections came from, seen by the broker, is checked across
// network namespaces by deploy/kubernetes/validate's TestJobInNamespaces.
func TestShardSourceAddresses(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(5e9)
	dir := t.TempDir()
	shard := func(addrs string) []string {
		return append(append([]string{"run", "--shard", "0/1", "--coordinator", loopback.FreeAddr(t), "--run-id", "src",
			"--broker", b.URL(), "--quiet", "--partial", filepath.Join(dir, addrs+".json"), "--source-addresses", addrs,
			// Counts only: the plan's latency threshold would make a
			// starved CI machine's run INCONCLUSIVE, which is not what
			// this test is about.
			"--set", `thresholds=["loss_rate == 0"]`}, small...), "plans/1to1-qos1.yaml")
	}
	runCmdCases(t, []cmdCase{
		{name: "loopback addresses", args: shard("127.0.0.2,127.0.0.3"), code: 0, want: []string{"PASS"}},
		// 192.0.2.1 is TEST-NET-1: no machine has it.
		{name: "an address this machine lacks", args: shard("192.0.2.1"), code: 3, want: []string{"bind: cannot assign requested address"}},
		{name: "without --shard", args: []string{"run", "--source-addresses", "127.0.0.2", "plans/1to1-qos1.yaml"}, code: 2,
			want: []string{"--source-addresses: only with --shard"}},
		{name: "with --workers", args: []string{"run", "--workers", "2", "--source-addresses", "127.0.0.2", "plans/1to1-qos1.yaml"}, code: 2,
			want: []string{"--workers with --source-addresses"}},
		{name: "not an address", args: []string{"run", "--shard", "0/1", "--coordinator", "127.0.0.1:1", "--run-id", "r", "--broker", b.URL(),
			"--source-addresses", "node-a", "plans/1to1-qos1.yaml"}, code: 2, want: []string{`"node-a" is not an IP address`}},
	})
}
