package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/loopback"
	"github.com/mqplan/mqplan/internal/mosquittotest"
	waitfor "github.com/mqplan/mqplan/internal/wait"
	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/plans"
)

// small scales plans/1to1-qos1.yaml down to a few seconds.
var small = []string{"--set", "groups.sub.count=6", "--set", "groups.pub.count=6", "--set", "warmup=300ms",
	"--set", "ramp=0s", "--set", "duration=1s", "--set", "drain=2s"}

// proc is an mqplan process of the test, its output kept.
type proc struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
	eof chan struct{}
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// start starts the mqplan binary with args (in the repository root).
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{eof: make(chan struct{})}
	cmd, stderr := startBinary(t, p, args...)
	p.cmd = cmd
	go func() { _, _ = io.Copy(p, stderr); close(p.eof) }()
	return p
}

// exit waits for p's exit code and whole output.
func (p *proc) exit(t *testing.T) (int, string) {
	t.Helper()
	code := wait(t, p.cmd, 2*time.Minute)
	<-p.eof
	return code, p.output()
}

// steadyCounts reads a JSON result's accounting of the steady phase.
func steadyCounts(t *testing.T, path string) string {
	t.Helper()
	r := savedResult(t, path)
	var b strings.Builder
	for _, m := range []metric.Name{metric.Sent, metric.Expected, metric.Received, metric.Lost, metric.Duplicates} {
		fmt.Fprintf(&b, "%s=%v ", m, r.Measured.Top[m])
	}
	return b.String()
}

// TestWorkersCountLikeOneProcess: mqplan run --workers 2 counts exactly
// what one process counts (sent, expected, received, lost, duplicates)
// on the embedded broker (hosted by the coordinating parent) and on
// Mosquitto, and what a faulty broker's own counters say it dropped and
// duplicated.
func TestWorkersCountLikeOneProcess(t *testing.T) {
	t.Parallel()
	mosq := ""
	if mosquittotest.Binary() != "" || os.Getenv("CI") != "" {
		mosq = mosquittotest.Start(t)
	}
	for _, tc := range []struct {
		name   string
		broker string // "" the plan's embedded broker
		faults broker.Faults
	}{
		{"embedded", "", broker.Faults{}},
		{"mosquitto", "mosquitto", broker.Faults{}},
		{"dropping and duplicating broker", "faulty", broker.Faults{DropEvery: 7, DuplicateEvery: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var args []string
			var b *broker.Broker
			switch tc.broker {
			case "mosquitto":
				if mosq == "" {
					t.Skip("mosquitto is not installed")
				}
				args = append(args, "--broker", mosq)
			case "faulty":
				var err error
				if b, err = broker.Start(broker.Options{Faults: tc.faults}); err != nil {
					t.Fatal(err)
				}
				defer b.Close(5 * time.Second)
				args = append(args, "--broker", b.URL())
			}
			args = append(args, small...)
			if b != nil {
				args = append(args, "--set", "warmup=0s")
			}
			workers := start(t, append(append([]string{"run", "--workers", "2", "--json", filepath.Join(dir, "w.json")}, args...), "plans/1to1-qos1.yaml")...)
			code, out := workers.exit(t)
			if !judged(code) {
				t.Fatalf("--workers 2: exit %d\n%s", code, out)
			}
			got := steadyCounts(t, filepath.Join(dir, "w.json"))
			var want string
			if b != nil {
				// No warmup: every message is the steady phase's, and the
				// broker's counters are the whole truth.
				fc := b.FaultCounts()
				if fc.Dropped == 0 || fc.Duplicated == 0 {
					t.Fatalf("the broker dropped %d and duplicated %d: the test tests nothing", fc.Dropped, fc.Duplicated)
				}
				want = fmt.Sprintf("sent=%d expected=%d received=%d lost=%d duplicates=%d ", fc.Published, fc.Deliveries,
					fc.Deliveries-fc.Dropped+fc.Duplicated, fc.Dropped, fc.Duplicated)
			} else {
				one := runCmd(t, append(append([]string{"run", "--quiet", "--json", filepath.Join(dir, "one.json")}, args...), "plans/1to1-qos1.yaml")...)
				if !judged(one.code) {
					t.Fatalf("one process: exit %d\n%s", one.code, one.stderr)
				}
				want = steadyCounts(t, filepath.Join(dir, "one.json"))
			}
			if got != want {
				t.Errorf("--workers 2 counted %s\none process %s", got, want)
			}
		})
	}
}

// TestShardFaults: a run of two shards (mqplan run --shard I/2) in two
// processes, shard 0 the coordinator: a shard killed mid-run leaves the
// coordinator an incomplete run (exit 3) naming it, with the partials of
// the others written; a shard of another plan is refused on both sides
// (exit 2); a coordinator killed mid-run stops the other shard, which
// writes its part and exits 3; a plan with the embedded broker is
// refused (exit 2); a
// coordinator that starts after the other shard is waited for, and the
// run proceeds.
func TestShardFaults(t *testing.T) {
	t.Parallel()
	// The fault hook (a copy in a million) counts what the broker takes:
	// the test kills a shard once the shards publish.
	b, err := broker.Start(broker.Options{Faults: broker.Faults{DuplicateEvery: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(5 * time.Second)
	const plan = "testdata/cli/pass.yaml"
	shardArgs := func(dir, coordAddr string, i int, extra ...string) []string {
		args := []string{"run", "--shard", fmt.Sprintf("%d/2", i), "--coordinator", coordAddr, "--run-id", "faults",
			"--coordinator-timeout", "20s", "--broker", b.URL(), "--partial", filepath.Join(dir, fmt.Sprintf("part-%d.json", i))}
		return append(append(args, extra...), plan)
	}
	// A shard killed once both publish: the survivor exits 3, saying
	// so, with its part written.
	for _, tc := range []struct {
		name           string
		killed, others int
		duration       string // the survivor's run goes on to its end, or stops at once
		says           []string
	}{
		{"a shard killed mid-run", 1, 0, "duration=3s", []string{"shards 1 lost during the run", "INCOMPLETE"}},
		{"the coordinator killed mid-run", 0, 1, "duration=30s", []string{"the coordinator was lost", "mqplan merge takes it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, addr := t.TempDir(), loopback.FreeAddr(t)
			shards := []*proc{start(t, shardArgs(dir, addr, 0, "--set", tc.duration)...), start(t, shardArgs(dir, addr, 1, "--set", tc.duration)...)}
			published := b.FaultCounts().Published
			waitfor.UntilWithin(t, 30*time.Second, 10*time.Millisecond, "the shards publishing", func() bool {
				return b.FaultCounts().Published > published
			})
			if err := shards[tc.killed].cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			code, out := shards[tc.others].exit(t)
			for _, w := range tc.says {
				if code != 3 || !strings.Contains(out, w) {
					t.Fatalf("shard %d: exit %d, want 3 saying %q\n%s", tc.others, code, w, out)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("part-%d.json", tc.others))); err != nil {
				t.Errorf("shard %d's partial: %v", tc.others, err)
			}
		})
	}
	t.Run("a shard of another plan", func(t *testing.T) {
		dir, addr := t.TempDir(), loopback.FreeAddr(t)
		s0 := start(t, shardArgs(dir, addr, 0)...)
		s1 := start(t, shardArgs(dir, addr, 1, "--set", "duration=2s")...)
		c1, out1 := s1.exit(t)
		c0, out0 := s0.exit(t)
		if c0 != 2 || c1 != 2 || !strings.Contains(out0, "runs another plan") || !strings.Contains(out1, "runs another plan") {
			t.Fatalf("exits %d and %d, want 2 and 2 saying so\n%s\n%s", c0, c1, out0, out1)
		}
	})
	t.Run("clean churning subscribers", func(t *testing.T) {
		for _, args := range [][]string{
			{"run", "--shard", "0/2", "--coordinator", "127.0.0.1:1", "--run-id", "x", "--broker", b.URL(), "plans/churn.yaml"},
			{"run", "--workers", "2", "plans/churn.yaml"},
		} {
			r := runCmd(t, args...)
			if r.code != 2 || !strings.Contains(r.stderr, "churn.yaml:") || !strings.Contains(r.stderr, "clean_start: a subscribing group that churns with a clean session: not supported yet") {
				t.Errorf("%v: exit %d, want 2 naming the group\n%s", args, r.code, r.stderr)
			}
		}
	})
	t.Run("the embedded broker", func(t *testing.T) {
		r := runCmd(t, "run", "--shard", "0/2", "--coordinator", "127.0.0.1:1", "--run-id", "x", plan)
		if r.code != 2 || !strings.Contains(r.stderr, `the plan's broker is "embedded"`) {
			t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
		}
	})
	t.Run("the coordinator starts late", func(t *testing.T) {
		dir, addr := t.TempDir(), loopback.FreeAddr(t)
		s1 := start(t, shardArgs(dir, addr, 1)...)
		// Shard 1 is started first; a process takes milliseconds to
		// start, so it dials before anything listens and retries.
		s0 := start(t, shardArgs(dir, addr, 0, "--json", filepath.Join(dir, "run.json"))...)
		c0, out0 := s0.exit(t)
		c1, out1 := s1.exit(t)
		if c0 != 0 || c1 != 0 {
			t.Fatalf("exits %d and %d, want 0 and 0\n%s\n%s", c0, c1, out0, out1)
		}
		if got := steadyCounts(t, filepath.Join(dir, "run.json")); !strings.Contains(got, "lost=0 duplicates=0") || strings.Contains(got, "sent=0 ") {
			t.Errorf("counts %s", got)
		}
	})
}

// TestPartitionSources: --workers children share the source addresses
// out, worker i taking j ≡ i (mod n), each client of its own bound to one
// of them, and none bound to another worker's.
func TestPartitionSources(t *testing.T) {
	for _, tc := range []struct {
		name  string
		addrs []string
		n     int
		want  [][]string // each worker's addresses
	}{
		{"more addresses than workers", []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}, 2,
			[][]string{{"127.0.0.1", "127.0.0.3", "127.0.0.5"}, {"127.0.0.2", "127.0.0.4"}}},
		{"fewer addresses than workers", []string{"127.0.0.1", "127.0.0.2"}, 3,
			[][]string{{"127.0.0.1"}, {"127.0.0.2"}, {"127.0.0.1"}}},
		{"none", nil, 2, [][]string{{""}, {""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := plans.LoadBytes("p.yaml", []byte("duration: 1s\ngroups:\n  - {name: s, count: 12, subscribe: {topic: t}}\n"), plans.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			plan.Broker.SourceAddresses = tc.addrs
			prog, err := plans.Compile(plan, plans.CompileOptions{RunID: "r"})
			if err != nil {
				t.Fatal(err)
			}
			a, err := plans.Assign(prog, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.n {
				partitionSources(prog, a.Mask(i), i, tc.n)
			}
			for i := range tc.n {
				used := map[string]bool{}
				for c, owned := range a.Mask(i) {
					if owned {
						used[prog.Clients[c].SourceAddr] = true
					}
				}
				if a.Counts()[i] >= len(tc.want[i]) && len(used) != len(tc.want[i]) {
					t.Errorf("worker %d binds %v, want %v", i, used, tc.want[i])
				}
				for _, w := range tc.want[i] {
					if a.Counts()[i] >= len(tc.want[i]) && !used[w] {
						t.Errorf("worker %d binds %v, want %v", i, used, tc.want[i])
					}
				}
			}
		})
	}
}

// TestWorkersStopOnSignal: SIGTERM to the --workers parent reaches every
// worker through the coordinator: they stop publishing, hand in their
// parts, and the merged report says the run was interrupted (exit 3).
func TestWorkersStopOnSignal(t *testing.T) {
	t.Parallel()
	// A broker with its fault hook on (a copy in a million) counts what
	// it takes: the test signals once the workers publish.
	b, err := broker.Start(broker.Options{Faults: broker.Faults{DuplicateEvery: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(5 * time.Second)
	p := start(t, append(append([]string{"run", "--workers", "2", "--broker", b.URL()}, small...), "--set", "duration=60s", "plans/1to1-qos1.yaml")...)
	waitfor.UntilWithin(t, 30*time.Second, 10*time.Millisecond, "the workers publishing", func() bool {
		return b.FaultCounts().Published > 0
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, out := p.exit(t)
	if code != 3 || !strings.Contains(out, "INTERRUPTED") && !strings.Contains(out, "INCOMPLETE") {
		t.Fatalf("exit %d, want 3 with the merged report\n%s", code, out)
	}
	if strings.Contains(out, "lost during the run") {
		t.Errorf("a worker did not hand in its part:\n%s", out)
	}
}

// TestAutoWorkers: --workers auto takes the fewest workers whose shards
// each fit their connections under the open-file limit.
func TestAutoWorkers(t *testing.T) {
	plan, err := plans.LoadBytes("p.yaml", []byte("duration: 1s\ngroups:\n  - {name: s, count: 1000, subscribe: {topic: t/%i}}\n  - {name: p, count: 1000, publish: {topic: t/%i, every: 1s}}\n"), plans.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := plans.Compile(plan, plans.CompileOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		limit int
		want  int
	}{
		{"unknown limit", 0, 1},
		{"room for all", 20000, 1},
		{"room for 1000 a worker", 1256, 2},
		{"room for 700 a worker", 956, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := autoWorkers(prog, tc.limit)
			if err != nil || got != tc.want {
				t.Errorf("autoWorkers(limit %d) = %d, %v; want %d", tc.limit, got, err, tc.want)
			}
		})
	}
	if _, err := autoWorkers(prog, 100); err == nil {
		t.Error("a limit below the margin: want an error")
	}
}

// TestShardWithoutACopy: a shard whose working directory cannot be
// written (a container's read-only root) and that was given no --partial
// says it keeps no copy of its part, and runs on: here it goes on to
// find no coordinator (exit 3, naming it).
func TestShardWithoutACopy(t *testing.T) {
	plan, err := filepath.Abs("testdata/cli/pass.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir("/proc") // no file can be created there, not even by root
	r := runCmd(t, "run", "--shard", "1/2", "--coordinator", "127.0.0.1:1", "--coordinator-timeout", "200ms", "--run-id", "x",
		"--broker", "mqtt://127.0.0.1:1", plan)
	if r.code != 3 || !strings.Contains(r.stderr, "shard 1/2 keeps no copy of its partial result") || !strings.Contains(r.stderr, "the coordinator 127.0.0.1:1 was not reached within 200ms") {
		t.Fatalf("exit %d, want 3 with the note\n%s", r.code, r.stderr)
	}
}
