package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/internal/loopback"
)

// TestShardOtherBrokerRefused: shards given different --broker are
// refused on both sides (exit 2) naming --broker and both URLs, not as
// "another plan" (the broker is in the plan's hash too, through --set
// broker.url, and the refusal asked for the same plan and --set flags).
func TestShardOtherBrokerRefused(t *testing.T) {
	t.Parallel()
	dir, addr := t.TempDir(), loopback.FreeAddr(t)
	shard := func(i int, url string) *proc {
		return start(t, "run", "--shard", fmt.Sprintf("%d/2", i), "--coordinator", addr, "--run-id", "brokers",
			"--coordinator-timeout", "20s", "--broker", url, "--partial", filepath.Join(dir, fmt.Sprintf("part-%d.json", i)), "testdata/cli/pass.yaml")
	}
	s0 := shard(0, "mqtt://127.0.0.1:1883")
	s1 := shard(1, "mqtt://127.0.0.2:1883")
	c1, out1 := s1.exit(t)
	c0, out0 := s0.exit(t)
	want := "shard 1 connects to broker mqtt://127.0.0.2:1883, the coordinator's run to mqtt://127.0.0.1:1883: give every shard the same --broker"
	for i, r := range []struct {
		code int
		out  string
	}{{c0, out0}, {c1, out1}} {
		if r.code != 2 || !strings.Contains(r.out, want) {
			t.Errorf("shard %d: exit %d, want 2 saying %q\n%s", i, r.code, want, r.out)
		}
	}
}
