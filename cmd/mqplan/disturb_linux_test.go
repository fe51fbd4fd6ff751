package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/procstat"
)

// disturbPlan is a clean plan whose latency threshold is tight enough to
// fail when mqplan shares its CPU with busy loops: 20 publishers, each
// with its own subscriber, 50 messages a second each. {{BROKER}} takes a
// broker line, {{EXTRA}} more thresholds.
const disturbPlan = `name: disturb
{{BROKER}}
groups:
  - name: sub
    count: 20
    subscribe: {topic: "disturb/%i", qos: 1}
  - name: pub
    count: 20
    publish: {topic: "disturb/%i", qos: 1, size: 64B, every: 20ms}
warmup: 1s
duration: 6s
drain: 2s
thresholds:
  - p99 < {{P99}}
{{EXTRA}}
`

// disturbReport is what these tests read of the JSON result.
type disturbReport struct {
	// path is the JSON result's file.
	path        string
	Verdict     string `json:"verdict"`
	Summary     string `json:"summary"`
	Disturbance *struct {
		Seconds     int     `json:"seconds"`
		Disturbed   int     `json:"disturbed"`
		Share       float64 `json:"share"`
		Significant bool    `json:"significant"`
	} `json:"disturbance"`
	Thresholds []struct {
		Expr      string `json:"expr"`
		Pass      bool   `json:"pass"`
		NotJudged string `json:"not_judged"`
	} `json:"thresholds"`
}

// busyLoopsEnv, set to 1, runs the tests that pin busy loops on a CPU.
const busyLoopsEnv = "MQPLAN_TEST_BUSY_LOOPS"

// TestDisturbedGenerator runs mqplan as a process pinned on one CPU with
// --procs 1, with three busy loops pinned on the same CPU, so that its
// threads get at most a quarter of it: the latency threshold it fails is
// not judged (INCONCLUSIVE, exit 4), while a loss under the same
// disturbance still fails the run, and a broker that delays every message
// by 50 ms fails it undisturbed.
func TestDisturbedGenerator(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the disturbance is measured on Linux only")
	}
	if testing.Short() {
		t.Skip("runs mqplan three times for 10 s")
	}
	if os.Getenv(busyLoopsEnv) != "1" {
		// Its busy loops take a CPU from every other package that go
		// test runs at the same time: beside them runner's timing tests
		// (a 6,000/s Poisson schedule, clean-session churn) fell behind.
		t.Skipf("set %s=1 to run it: it pins busy loops on a CPU, which starves tests running beside it; .ci/run runs it alone", busyLoopsEnv)
	}
	if _, err := procstat.NewSelfWait(); err != nil {
		t.Skipf("no schedstat here: %v", err)
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("needs taskset (util-linux) to pin the busy loops")
	}
	cpu := firstCPU(t)

	t.Run("starved clean run is inconclusive", func(t *testing.T) {
		hog(t, taskset, cpu, 3)
		code, r, out := runPinned(t, taskset, cpu, planFile(t, "", "1ms", ""))
		d := r.Disturbance
		// What the busy loops must cause, whatever the machine: most of
		// steady's seconds starved.
		if d == nil || !d.Significant || d.Share < 0.5 {
			t.Fatalf("disturbance %+v, want most of steady disturbed\n%s", d, out)
		}
		if code != exitInconclusive || r.Verdict != "INCONCLUSIVE" {
			t.Fatalf("exit %d, verdict %s, want 4 and INCONCLUSIVE\n%s", code, r.Verdict, out)
		}
		for _, w := range []string{"INCONCLUSIVE: mqplan waited ", "for a CPU in ", "its p99 send lag was ", "latency thresholds are not judged (p99 < 1ms read latency.p99="} {
			if !strings.Contains(out, w) {
				t.Errorf("the report lacks %q:\n%s", w, out)
			}
		}
		// The saved result re-renders with its verdict and exit code.
		if rep := runCmd(t, "report", r.path); rep.code != exitInconclusive || !strings.Contains(rep.stdout, "INCONCLUSIVE: mqplan waited ") {
			t.Errorf("mqplan report: exit %d, want 4\n%s%s", rep.code, rep.stdout, rep.stderr)
		}
	})

	t.Run("loss under the same disturbance fails", func(t *testing.T) {
		b := embedded(t, broker.Options{Faults: broker.Faults{DropEvery: 25}})
		hog(t, taskset, cpu, 3)
		code, r, out := runPinned(t, taskset, cpu, planFile(t, "broker: {url: \""+b.URL()+"\"}", "1ms", "  - lost == 0"))
		if code != exitFail || r.Verdict != "FAIL" {
			t.Fatalf("exit %d, verdict %s, want 1 and FAIL\n%s", code, r.Verdict, out)
		}
		for _, th := range r.Thresholds {
			if th.Expr == "lost == 0" && (th.Pass || th.NotJudged != "") {
				t.Errorf("lost == 0: pass %v, not judged %q: a loss is always judged", th.Pass, th.NotJudged)
			}
		}
	})

	t.Run("a delaying broker fails an undisturbed run", func(t *testing.T) {
		b := embedded(t, broker.Options{Faults: broker.Faults{Delay: 50 * time.Millisecond}})
		code, r, out := runPinned(t, "", "", planFile(t, "broker: {url: \""+b.URL()+"\"}", "10ms", ""))
		if code == exitInconclusive && r.Disturbance != nil && r.Disturbance.Significant {
			// Other processes starved this run after all: its latency
			// cannot be judged, which is the verdict's point.
			t.Skipf("the machine was busy (%d of %d steady seconds disturbed): the claim is about an undisturbed run", r.Disturbance.Disturbed, r.Disturbance.Seconds)
		}
		if code != exitFail || r.Verdict != "FAIL" {
			t.Fatalf("exit %d, verdict %s, want 1 and FAIL (the broker's 50 ms is not mqplan's)\n%s", code, r.Verdict, out)
		}
	})
}

// firstCPU is the first CPU this process may run on.
func firstCPU(t *testing.T) string {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Skipf("sched_getaffinity: %v", err)
	}
	for i := range 1024 {
		if set.IsSet(i) {
			return strconv.Itoa(i)
		}
	}
	t.Skip("no CPU in this process's affinity")
	return ""
}

// hog starts n busy loops pinned on cpu, each killed when the test ends
// and at most for two minutes.
func hog(t *testing.T, taskset, cpu string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	for range n {
		cmd := exec.CommandContext(ctx, taskset, "-c", cpu, "sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
}

// planFile writes disturbPlan with its broker line, p99 bound and extra
// thresholds.
func planFile(t *testing.T, brokerLine, p99, extra string) string {
	t.Helper()
	text := strings.NewReplacer("{{BROKER}}", brokerLine, "{{P99}}", p99, "{{EXTRA}}", extra).Replace(disturbPlan)
	path := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runPinned runs the mqplan binary on plan, pinned on cpu with --procs 1
// when taskset is given, and returns its exit code, its JSON result and
// its output.
func runPinned(t *testing.T, taskset, cpu, plan string) (int, disturbReport, string) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "result.json")
	args := []string{binary(t), "run", "--quiet", "--json", js, plan}
	if taskset != "" {
		args = append([]string{taskset, "-c", cpu, args[0], "run", "--quiet", "--procs", "1"}, args[3:]...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run()
	code := cmd.ProcessState.ExitCode()
	var r disturbReport
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatalf("exit %d, no result: %v\n%s", code, err, out.String())
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	r.path = js
	return code, r, out.String()
}
