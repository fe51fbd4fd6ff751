package validate

import (
	"context"
	"debug/elf"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/loopback"
	"github.com/mqplan/mqplan/internal/wait"
)

// The Dockerfile makes a static image of mqplan, run as the user the Job
// runs as. Not verified here (no container engine): that the image
// builds, that golang:1.26 is the Go of go.mod, that the CA bundle's path
// exists in it.
func TestDockerfile(t *testing.T) {
	d, err := ReadDockerfile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	final := d.Final()
	if final.Base != "scratch" && !strings.HasPrefix(final.Base, "gcr.io/distroless/static") {
		t.Errorf("the image is FROM %s, want scratch or distroless static: the binary is all it needs", final.Base)
	}
	user := final.Last("USER")
	uid, gid, _ := strings.Cut(user, ":")
	pod := render(t, deployDir).Job.Spec.Template.Spec.SecurityContext
	if uid == "" || uid == "0" || uid == "root" {
		t.Errorf("USER %q: want a numeric non-root user", user)
	} else if strconv.FormatInt(*pod.RunAsUser, 10) != uid || gid == "" || strconv.FormatInt(*pod.RunAsGroup, 10) != gid {
		t.Errorf("USER %s, but the Job runs as %d:%d", user, *pod.RunAsUser, *pod.RunAsGroup)
	}
	ep, err := d.Entrypoint()
	if err != nil {
		t.Fatal(err)
	}
	env, args, err := d.GoBuild("build")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-trimpath", "./cmd/mqplan"} {
		if !slices.Contains(args, want) {
			t.Errorf("go %s: no %s", strings.Join(args, " "), want)
		}
	}
	if !slices.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("the build's environment %q has no CGO_ENABLED=0", env)
	}
	out := args[slices.Index(args, "-o")+1]
	if want := "COPY --from=build " + out + " " + ep[0]; !slices.Contains(final.Lines, [2]string{"COPY", strings.TrimPrefix(want, "COPY ")}) {
		t.Errorf("the final stage has no %q: the entrypoint is not the binary built", want)
	}

	bin := mqplanBinary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: not static, it cannot start FROM scratch", bin)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v (%v)", bin, libs, err)
	}
	if r := runMqplan(t, bin, "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "mqplan unknown (") {
		t.Errorf("mqplan version: exit %d, %q: want the Dockerfile's default VERSION, unknown, stamped by its -ldflags", r.code, r.stdout)
	}
}

// The sharded run's flags the Job passes (issue 11): left out where the
// Job runs as one process without sharding
// (TestJobRunsOneShardWithoutSharding), and required by TestJobRunsShards.
var pendingFlags = []string{"shard", "coordinator", "run-id", "token-file"}

// Each index's argv, as the kubelet would start it, is a command line
// today's mqplan accepts in every part it knows, and its plan (the
// ConfigMap, materialised where the mount puts it) loads with its
// --broker.
func TestJobArgvParses(t *testing.T) {
	bin := mqplanBinary(t)
	known := runFlags(t, bin)
	b := render(t, deployDir)
	for i := 0; i < int(*b.Job.Spec.Completions); i++ {
		p, local := startPod(t, b, i)
		s, err := ParseShardArgv(p.Argv)
		if err != nil {
			t.Fatal(err)
		}
		run, explain := []string{"run"}, []string{"explain"}
		for _, f := range s.Flags {
			switch {
			case known[f[0]]:
				run = append(run, "--"+f[0], local(f[1]))
			case slices.Contains(pendingFlags, f[0]):
				continue
			default:
				t.Errorf("index %d: the Job passes --%s, which mqplan run does not have", i, f[0])
			}
			if f[0] == "broker" {
				explain = append(explain, "--broker", f[1])
			}
		}
		plan := local(s.Plan)
		// --help after every flag: each is parsed (an unknown one is
		// exit 2), then run stops before connecting.
		if r := runMqplan(t, bin, append(append(run, plan), "--help")...); r.code != 0 {
			t.Errorf("index %d: mqplan %q: exit %d\n%s", i, run, r.code, r.stderr)
		}
		if r := runMqplan(t, bin, append(explain, plan)...); r.code != 0 {
			t.Errorf("index %d: mqplan %q %s: exit %d\n%s", i, explain, plan, r.code, r.stderr)
		}
	}
}

// The Job run for real: every index's argv as a process on this machine,
// mqplan-0.mqplan resolving to it, against an embedded broker. mqplan run
// has the sharded run's flags (issue 11): one missing is a failure, not
// a skip, since the Job's pods could not run.
func TestJobRunsShards(t *testing.T) {
	bin := mqplanBinary(t)
	known := runFlags(t, bin)
	for _, f := range pendingFlags {
		if !known[f] {
			t.Fatalf("mqplan run has no --%s: the Job's pods cannot run", f)
		}
	}
	runJob(t, bin, render(t, deployDir), nil)
}

// The same machinery today, on what mqplan has: the Job with one shard,
// its argv without the sharded run's flags, is the whole plan in one
// process, and it passes against the broker the argv names.
func TestJobRunsOneShardWithoutSharding(t *testing.T) {
	bin := mqplanBinary(t)
	b := render(t, copyDeploy(t, map[string][2]string{"kustomization.yaml": {"shards=4", "shards=1"}}))
	runJob(t, bin, b, pendingFlags)
}

// runJob starts every index of b's Job as a process of bin, with the
// coordinator's name and the broker's URL pointed at this machine, less
// the flags omit names. Every process must end with a verdict (exit 0 or
// 1: the latency thresholds are this shared machine's to pass or fail,
// not the manifests'), and index 0's result must be complete and exact:
// every expected delivery received once, none lost.
func runJob(t *testing.T, bin string, b *Bundle, omit []string) {
	brokerAddr := loopback.FreeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	broker := exec.CommandContext(ctx, bin, "broker", "--listen", brokerAddr)
	if err := broker.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = broker.Wait() }()
	wait.UntilWithin(t, wait.Timeout, 20*time.Millisecond, "the broker to listen on "+brokerAddr, func() bool {
		c, err := net.DialTimeout("tcp", brokerAddr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	n := int(*b.Job.Spec.Completions)
	coordinator := loopback.FreeAddr(t)
	resultFile := filepath.Join(t.TempDir(), "result.json")
	results := make([]result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	var sharedPlan string
	partDir := t.TempDir()
	for i := 0; i < n; i++ {
		p, local := startPod(t, b, i)
		args := make([]string, 0, len(p.Argv)+8)
		for j := 1; j < len(p.Argv); j++ {
			a := p.Argv[j]
			switch {
			case slices.Contains(omit, strings.TrimPrefix(a, "--")):
				j++ // and its value
				continue
			case a == "mqplan-0.mqplan:7070":
				a = coordinator // what the headless Service resolves, here
			case a == "mqtt://mosquitto:1883":
				a = "mqtt://" + brokerAddr
			}
			args = append(args, local(a))
		}
		// A short run: the plan's shape, not its 30 s.
		plan := args[len(args)-1]
		// Every pod mounts the one ConfigMap at one path, as in a
		// cluster, and the shards compare the plan with its file name:
		// every index names index 0's copy (the same bytes).
		if i == 0 {
			sharedPlan = plan
		} else {
			plan = sharedPlan
		}
		args = append(args[:len(args)-1], "--quiet", "--set", "duration=3s", "--set", "ramp=1s", "--set", "drain=2s")
		if i == 0 {
			args = append(args, "--out", "json="+resultFile)
		}
		// A pod's root is read-only, so a shard keeps no copy of its part
		// there; here the copy goes to the test's directory, not the
		// source tree the test runs in.
		args = append(args, "--partial", filepath.Join(partDir, fmt.Sprintf("part-%d.json", i)))
		args = append(args, plan)
		// The container's environment, as the kubelet and the runtime
		// give it, and nothing of this test's.
		env := []string{"HOSTNAME=" + p.Hostname}
		for _, e := range p.Env {
			env = append(env, e.Name+"="+e.Value)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = execMqplan(ctx, bin, env, args...)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if errs[i] != nil || (r.code != 0 && r.code != 1 && r.code != 4) {
			t.Fatalf("index %d: exit %d (%v), want a verdict (0, 1 or 4)\nstdout:\n%s\nstderr:\n%s", i, r.code, errs[i], r.stdout, r.stderr)
		}
	}
	c := readCounts(t, resultFile)
	if !c.exact() {
		t.Errorf("index 0: %+v: want complete and every expected delivery received once", c)
	}
	t.Logf("index 0: %s, %v deliveries", c.Verdict, c.Received)
}

// startPod emulates index i of the Job with the Dockerfile's entrypoint
// and materialises its mounts; local maps a container path to its copy.
func startPod(t *testing.T, b *Bundle, i int) (p *Pod, local func(string) string) {
	t.Helper()
	p, err := Emulate(b, PodOptions{Index: i, JobUID: ExampleJobUID, Entrypoint: entrypoint(t)})
	if err != nil {
		t.Fatal(err)
	}
	local, err = p.Materialise(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p, local
}
