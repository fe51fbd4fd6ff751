package validate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// netPod is one index of the Job, run as a process in its shard's
// namespace.
type netPod struct {
	index          int
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	// dir is the pod's own volume: its partial result and JSON report.
	dir string
	// argv and env are the pod's process's, as started.
	argv, env []string
	ended     chan struct{}
	code      int32 // as the container runtime reports it: 128+N for signal N
	killed    bool  // stopped by the Job controller once the Job ended
}

func (p *netPod) partial() string { return filepath.Join(p.dir, "part.json") }
func (p *netPod) report() string  { return filepath.Join(p.dir, "result.json") }

// signal sends sig to the pod's process (mqplan itself: see command).
func (p *netPod) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("index %d: %v: %v", p.index, sig, err)
	}
}

// netJob is a Job run to its end in namespaces: the Job's state as its
// controller would decide it, and each index's process.
type netJob struct {
	state JobState
	pods  []*netPod
	// ends are the pods' ends in the order the emulator saw them.
	ends []PodEnd
	// took is from the first pod's start to the Job's end; end is when
	// the last pod ended.
	took time.Duration
	end  time.Time
}

// jobConfig is what a test adds to the Job's pods or does to them.
type jobConfig struct {
	// args go before the plan on every index (a shorter run); each index
	// also gets --partial and --out json= in its own directory, as a
	// volume mounted at the same path in every pod would give.
	args []string
	// indexArgs go before the plan on one index (its machine's source
	// addresses).
	indexArgs func(i int) []string
	// coordinatorLate starts index 0 this much after the others, as a
	// pod scheduled late would be.
	coordinatorLate time.Duration
	// fault runs once every pod started, on the test's goroutine.
	fault func(t *testing.T, pods []*netPod)
}

// runNetJob runs the Job of b as its controller and kubelets would, each
// index in its shard's namespace (hostname mqplan-I in a UTS namespace of
// its own), from the Job decoded strictly: the pods' argv, env and
// mounts are what Emulate gives, the binary stands for the image's
// entrypoint, and the names in the argv (the coordinator's, the broker's)
// resolve through the hosts' /etc/netns files. Each pod's end goes to
// DecideJob in the order the pods end; once the Job is done, the pods
// still running are stopped as the controller stops them (SIGTERM, then
// SIGKILL after the grace period). Every step is bounded: the whole Job
// by two minutes.
func (h *netHosts) runNetJob(t *testing.T, bin string, b *Bundle, cfg jobConfig) *netJob {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := int(*b.Job.Spec.Completions)
	if n != len(h.shards) {
		t.Fatalf("the Job has %d indexes, the network %d shard hosts", n, len(h.shards))
	}
	grace := 30 * time.Second
	if g := b.Job.Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	var plan []byte
	var planPath string
	pods := make([]*netPod, n)
	for i := range pods {
		p, local := startPod(t, b, i)
		s, err := ParseShardArgv(p.Argv)
		if err != nil {
			t.Fatal(err)
		}
		// Every pod mounts the one ConfigMap at one path, and the shards
		// compare the plan by its name: every index names index 0's
		// copy, which holds the same bytes as its own.
		data, ok := p.File(s.Plan)
		switch {
		case !ok:
			t.Fatalf("index %d: no mount holds its plan %s", i, s.Plan)
		case i == 0:
			plan, planPath = data, local(s.Plan)
		case !bytes.Equal(data, plan):
			t.Fatalf("index %d mounts another plan than index 0", i)
		}
		// Each argument naming a mounted file (the token) names its copy.
		args := []string{bin}
		for _, a := range p.Argv[1 : len(p.Argv)-1] {
			args = append(args, local(a))
		}
		args = append(args, cfg.args...)
		if cfg.indexArgs != nil {
			args = append(args, cfg.indexArgs(i)...)
		}
		pod := &netPod{index: i, stdout: &syncBuffer{}, stderr: &syncBuffer{}, dir: t.TempDir(), ended: make(chan struct{})}
		args = append(args, "--partial", pod.partial(), "--out", "json="+pod.report(), planPath)
		// The container's environment as the kubelet gives it, and
		// nothing of this test's.
		env := []string{"HOSTNAME=" + p.Hostname}
		for _, e := range p.Env {
			env = append(env, e.Name+"="+e.Value)
		}
		pod.argv, pod.env = args, env
		pod.cmd = h.command(ctx, h.shards[i].ns, p.Hostname, env, args...)
		pod.cmd.Stdout, pod.cmd.Stderr = pod.stdout, pod.stderr
		pods[i] = pod
	}
	ends := make(chan *netPod, n)
	start := func(p *netPod) {
		if err := p.cmd.Start(); err != nil {
			t.Fatalf("index %d: %v", p.index, err)
		}
		go func() {
			_ = p.cmd.Wait() // the exit status is in ProcessState
			p.code = exitCode(p.cmd)
			close(p.ended)
			ends <- p
		}()
	}
	// Whatever happens to the test, no pod outlives it.
	t.Cleanup(func() {
		cancel()
		for _, p := range pods {
			if p.cmd.Process != nil {
				<-p.ended
			}
		}
	})
	began := time.Now()
	for _, p := range pods[1:] {
		start(p)
	}
	if cfg.coordinatorLate > 0 {
		// The fault itself, not a wait for something: index 0's pod is
		// scheduled this much later than the others.
		select {
		case <-time.After(cfg.coordinatorLate):
		case <-ctx.Done():
			t.Fatal("the Job's deadline passed before index 0 started")
		}
	}
	start(pods[0])
	if cfg.fault != nil {
		cfg.fault(t, pods)
	}

	job := &netJob{pods: pods, state: JobState{Decided: -1}}
	var stopped <-chan time.Time
	for range n {
		var p *netPod
		select {
		case p = <-ends:
		case <-stopped:
			// The grace period is over: the kubelet kills.
			for _, q := range pods {
				_ = q.cmd.Process.Kill()
			}
			stopped = nil
			p = <-ends
		case <-ctx.Done():
			t.Fatalf("the Job did not end within its deadline:\n%s", job.logs())
		}
		job.ends = append(job.ends, PodEnd{Index: p.index, ExitCode: p.code})
		if job.state.Done {
			continue
		}
		st, err := DecideJob(b.Job, job.ends)
		if err != nil {
			t.Fatalf("%v\n%s", err, job.logs())
		}
		if st.Done {
			job.state, job.took = st, time.Since(began)
			// The controller deletes the Job's active pods.
			for _, q := range pods {
				select {
				case <-q.ended:
				default:
					q.killed = true
					_ = q.cmd.Process.Signal(syscall.SIGTERM)
				}
			}
			stopped = time.After(grace)
		}
	}
	job.end = time.Now()
	return job
}

// exitCode is a finished process's exit code as a container runtime
// reports it: 128+N when signal N killed it.
func exitCode(cmd *exec.Cmd) int32 {
	ps := cmd.ProcessState
	if ps == nil {
		return -1 // it never ran
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(ps.ExitCode())
}

// logs are every pod's exit code and output, for a failure's message.
func (j *netJob) logs() string {
	var b strings.Builder
	for _, p := range j.pods {
		select {
		case <-p.ended:
			fmt.Fprintf(&b, "--- index %d: exit %d (stopped by the Job: %v)\n", p.index, p.code, p.killed)
		default:
			fmt.Fprintf(&b, "--- index %d: running\n", p.index)
		}
		fmt.Fprintf(&b, "stderr:\n%s\nstdout:\n%s\n", p.stderr, p.stdout)
	}
	return b.String()
}

// counts are a run's figures the merge must keep exact.
type counts struct {
	Verdict                                    string
	Complete                                   bool
	Sent, Expected, Received, Lost, Duplicates float64
}

// exact: a complete run in which every expected delivery was received
// once.
func (c counts) exact() bool {
	return c.Complete && c.Expected > 0 && c.Received == c.Expected && c.Lost == 0 && c.Duplicates == 0
}

// readCounts reads a JSON report's verdict and delivery counters.
func readCounts(t *testing.T, file string) counts {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Verdict  string
		Complete bool
		Metrics  struct{ Top map[string]any }
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	num := func(name string) float64 {
		v, ok := doc.Metrics.Top[name].(float64)
		if !ok {
			t.Fatalf("%s: metric %s is %v, not a number", file, name, doc.Metrics.Top[name])
		}
		return v
	}
	return counts{Verdict: doc.Verdict, Complete: doc.Complete, Sent: num("sent"), Expected: num("expected"),
		Received: num("received"), Lost: num("lost"), Duplicates: num("duplicates")}
}

// jobNames are the DNS names the rendered Job's pods dial, each mapped to
// the host that answers it: the coordinator's (index 0) and the broker's.
func jobNames(t *testing.T, b *Bundle) map[string]int {
	t.Helper()
	p, err := Emulate(b, PodOptions{Index: 0, JobUID: ExampleJobUID, Entrypoint: entrypoint(t)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseShardArgv(p.Argv)
	if err != nil {
		t.Fatal(err)
	}
	coordinator, _, err := net.SplitHostPort(s.Coordinator)
	if err != nil {
		t.Fatalf("--coordinator %q: %v", s.Coordinator, err)
	}
	for _, f := range s.Flags {
		if f[0] == "broker" {
			u, err := url.Parse(f[1])
			if err != nil || u.Hostname() == "" {
				t.Fatalf("--broker %q: want a URL with a host (%v)", f[1], err)
			}
			return map[string]int{coordinator: 0, u.Hostname(): -1}
		}
	}
	t.Fatal("the Job's pods pass no --broker")
	return nil
}
