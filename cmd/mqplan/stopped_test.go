//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	waitfor "github.com/mqplan/mqplan/internal/wait"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
)

// stoppedPlan is TestWorkerStoppedIsLost's plan: two 1-to-1 pairs a
// worker, the subscribers connecting one a second (so that connecting
// lasts 3 s), and a drain longer than the run's publishing.
const stoppedPlan = `name: stopped
broker: {url: embedded}
groups:
  - name: sub
    count: 4
    client_id: "sub-%i"
    connect_rate: 1/s
    subscribe: {topic: "stopped/%i", qos: 1}
  - name: pub
    count: 4
    client_id: "pub-%i"
    publish: {topic: "stopped/%i", qos: 1, every: 250ms}
warmup: 0s
duration: 2s
drain: 4s
`

// TestWorkerStoppedIsLost: a --workers child stopped for good (SIGSTOP:
// its process hangs, its connection stays open) is declared lost within
// the coordinator's 10 s of silence in every phase, connecting,
// publishing or draining; the parent ends it and finishes the run without
// it (exit 3, INCOMPLETE, never PASS). The parent used to wait a minute
// for the stopped worker's exit after the others had handed in: 72 s
// from the stop to the verdict.
func TestWorkerStoppedIsLost(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the workers are found through Linux's /proc")
	}
	path := writePlan(t, stoppedPlan)
	p, err := plans.LoadBytes("stopped.yaml", []byte(stoppedPlan), plans.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := plans.Compile(p, plans.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	planned := prog.Phases[phase.Steady].Messages
	for _, tc := range []struct {
		name   string
		faults broker.Faults
		// when says the worker is in the phase: read from the broker.
		when func(b *broker.Broker) bool
	}{
		{"connecting", broker.Faults{DuplicateEvery: 1 << 20}, func(b *broker.Broker) bool { return b.Stats().ClientsMaximum >= 1 }},
		{"publishing", broker.Faults{DuplicateEvery: 1 << 20}, func(b *broker.Broker) bool { return b.FaultCounts().Published > 0 }},
		// Every third delivery dropped: both workers drain to the limit.
		{"draining", broker.Faults{DropEvery: 3}, func(b *broker.Broker) bool { return b.FaultCounts().Published >= planned }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := broker.Start(broker.Options{Faults: tc.faults})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close(5 * time.Second)
			parent := start(t, "run", "--workers", "2", "--broker", b.URL(), path)
			worker := workerPID(t, parent.cmd.Process.Pid, 1, 2)
			t.Cleanup(func() { _ = syscall.Kill(worker, syscall.SIGKILL) })
			waitfor.UntilWithin(t, 30*time.Second, 5*time.Millisecond, "the workers "+tc.name, func() bool { return tc.when(b) })
			if err := syscall.Kill(worker, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			// Ten beats missed, and a little for a busy machine.
			waitfor.UntilWithin(t, 12*time.Second, 20*time.Millisecond, "worker 1 declared lost", func() bool {
				return strings.Contains(parent.output(), "worker 1/2 lost: silent for 10s")
			})
			lost := time.Since(stopped)
			// The other worker's run ends within the plan's 2 s of
			// publishing and 4 s of drain of the stop.
			code := wait(t, parent.cmd, 10*time.Second)
			<-parent.eof
			out := parent.output()
			if code != 3 || !strings.Contains(out, "shards 1 lost during the run") || !strings.Contains(out, "INCOMPLETE") {
				t.Fatalf("exit %d, want 3 and an incomplete run naming shard 1\n%s", code, out)
			}
			if err := syscall.Kill(worker, 0); err == nil {
				t.Errorf("the stopped worker (pid %d) is still there after the run", worker)
			}
			t.Logf("declared lost %v after the stop, the run over %v after it", lost.Round(time.Millisecond), time.Since(stopped).Round(time.Millisecond))
		})
	}
}

// workerPID finds the pid of --workers worker i/n among parent's
// children (its command line says --shard i/n).
func workerPID(t *testing.T, parent, i, n int) int {
	t.Helper()
	want := []byte(fmt.Sprintf("\x00--shard\x00%d/%d\x00", i, n))
	pid := 0
	waitfor.UntilWithin(t, 30*time.Second, 5*time.Millisecond, fmt.Sprintf("worker %d/%d started", i, n), func() bool {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", parent))
		for _, task := range tasks {
			kids, _ := os.ReadFile(task)
			for _, k := range strings.Fields(string(kids)) {
				cmdline, _ := os.ReadFile("/proc/" + k + "/cmdline")
				if bytes.Contains(cmdline, want) {
					pid, _ = strconv.Atoi(k)
					return pid > 0
				}
			}
		}
		return false
	})
	return pid
}
