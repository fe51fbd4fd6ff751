package validate

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/mqplan/mqplan/internal/wait"
)

// netPlanArgs shorten the ConfigMap's plan to a few seconds and keep its
// thresholds to what is exact on a loaded machine (delivery and
// connections, not latency), so that the verdict is the merge's, not the
// machine's.
var netPlanArgs = []string{"--set", "warmup=1s", "--set", "ramp=1s", "--set", "duration=3s", "--set", "drain=2s",
	"--set", `thresholds=["loss_rate == 0 and dup_rate == 0", "connect.failed == 0", "groups.sub.recv_rate >= groups.pub.send_rate * 0.95"]`}

// ownsClients is a shard's line saying how many clients it owns.
var ownsClients = regexp.MustCompile(`shard (\d+)/\d+ joined .*; (\d+) of (\d+) clients are this shard's`)

// The Indexed Job across simulated machines: the shipped manifests,
// decoded strictly, run as one process per index, each in its own
// network namespace with its own addresses and hostname mqplan-I, the
// coordinator found as mqplan-0.mqplan and the broker as the manifests
// name it, Mosquitto on a host of its own. The Job's outcome is what its
// controller would decide from the exit codes (DecideJob), and index 0's
// merged report is what the same plan gives as one process. Then the
// faults a cluster has: a pod killed, a pod stopped, a shard's node cut
// off, the coordinator's node cut off, a coordinator scheduled late. Each
// case builds its own network, so they run in parallel (about 20 s in all
// on this 2-CPU machine).
func TestJobInNamespaces(t *testing.T) {
	bin := mqplanBinary(t)
	b := render(t, deployDir)
	// What the emulation takes for granted about the Job (Indexed, index
	// 0 the coordinator, exit codes 1-3 fail it, one N everywhere).
	if errs := Check(b, entrypoint(t)); len(errs) > 0 {
		t.Fatalf("the shipped Job breaks a sharded run's invariants: %v", errs)
	}
	n := int(*b.Job.Spec.Completions)
	names := jobNames(t, b)
	if n < 4 {
		t.Fatalf("the shipped Job has %d shards: the fault cases need 4", n)
	}
	// Each shard connects from its own two extra addresses, as each
	// machine of a run passes its own.
	sources := func(h *netHosts) func(i int) []string {
		return func(i int) []string {
			return []string{"--source-addresses", strings.Join(h.shards[i].sources, ",")}
		}
	}
	// steady waits until index i reports the steady phase: the run is
	// under way on every shard (they start it together).
	steady := func(t *testing.T, p *netPod) {
		wait.UntilWithin(t, time.Minute, 20*time.Millisecond, fmt.Sprintf("index %d to reach the steady phase", p.index), func() bool {
			select {
			case <-p.ended:
				t.Fatalf("index %d ended (exit %d) before the steady phase:\n%s", p.index, p.code, p.stderr)
			default:
			}
			return strings.Contains(p.stderr.String(), "[steady")
		})
	}
	// signalInSteady sends sig to index i once the run is under way.
	signalInSteady := func(i int, sig syscall.Signal) func(h *netHosts) jobConfig {
		return func(h *netHosts) jobConfig {
			return jobConfig{args: netPlanArgs, fault: func(t *testing.T, pods []*netPod) {
				steady(t, pods[i])
				pods[i].signal(t, sig)
			}}
		}
	}
	// cutInSteady sets the bridge's end of index i's cable down once the
	// run is under way: a partition, the host itself unaware.
	cutInSteady := func(h *netHosts, i int) func(t *testing.T, pods []*netPod) {
		return func(t *testing.T, pods []*netPod) {
			steady(t, pods[i])
			h.ip("-n", h.bridge, "link", "set", h.shards[i].peer, "down")
			h.cutAt = time.Now()
		}
	}
	// afterCut: each side of a cut gives the other up after 10 s without
	// a beat (one a second), so the Job ends 9 to 10 s after the cut (the
	// run's own end is earlier); the margin is this loaded machine's.
	afterCut := func(t *testing.T, h *netHosts, j *netJob) {
		t.Helper()
		d := j.end.Sub(h.cutAt)
		if d < 9*time.Second || d > 15*time.Second {
			t.Errorf("the Job ended %v after the cut, want 9-10 s (the coordinator's idle timeout), at most 15 s", d.Round(time.Millisecond))
		}
		t.Logf("the Job ended %v after the cut", d.Round(time.Millisecond))
	}
	parts := func(t *testing.T, j *netJob, want ...int) {
		t.Helper()
		for _, i := range want {
			if _, err := os.Stat(j.pods[i].partial()); err != nil {
				t.Errorf("index %d wrote no partial result: %v\n%s", i, err, j.pods[i].stderr)
			}
		}
	}
	failed := func(t *testing.T, j *netJob, reason string) {
		t.Helper()
		if !j.state.Done || j.state.Condition != batchv1.JobFailed || j.state.Reason != reason {
			t.Errorf("the Job: %+v, want Failed (%s)\n%s", j.state, reason, j.logs())
		}
	}
	incomplete := func(t *testing.T, j *netJob, line string) {
		t.Helper()
		p := j.pods[0]
		if p.code != 3 || !strings.Contains(p.stderr.String()+p.stdout.String(), line) {
			t.Errorf("index 0: exit %d, want 3 with %q\n%s", p.code, line, j.logs())
		}
		if c := readCounts(t, p.report()); c.Complete || c.Verdict != "INCOMPLETE" {
			t.Errorf("index 0's report: %+v, want INCOMPLETE", c)
		}
	}

	tests := []struct {
		name string
		cfg  func(h *netHosts) jobConfig
		// check judges the ended Job; single is the same plan run as one
		// process against the same broker, before the Job.
		check func(t *testing.T, h *netHosts, m *mosquitto, j *netJob, single counts, mark int)
		// one: run the plan as one process first, for check's single.
		one bool
	}{
		{
			name: "passes and counts like one process",
			one:  true,
			cfg: func(h *netHosts) jobConfig {
				return jobConfig{args: netPlanArgs, indexArgs: sources(h)}
			},
			check: func(t *testing.T, h *netHosts, m *mosquitto, j *netJob, single counts, mark int) {
				if !j.state.Done || j.state.Condition != batchv1.JobComplete || j.state.Reason != ReasonSuccessPolicy || j.state.Decided != 0 {
					t.Fatalf("the Job: %+v, want Complete by index 0's success\n%s", j.state, j.logs())
				}
				got := readCounts(t, j.pods[0].report())
				if got != single || !got.exact() {
					t.Errorf("the Job's merged report %+v, one process %+v: want both complete, equal and exact", got, single)
				}
				// Each shard connected from its own addresses only, as
				// many clients as it owns, every one the broker saw.
				conns := m.connectionsSince(mark)
				byAddr := map[string]int{}
				for a, ids := range conns {
					byAddr[a] = len(ids)
				}
				total := 0
				for i, x := range h.shards {
					own := ownsClients.FindStringSubmatch(j.pods[i].stderr.String())
					if own == nil || own[1] != fmt.Sprint(i) {
						t.Fatalf("index %d does not say how many clients it owns:\n%s", i, j.pods[i].stderr)
					}
					from := 0
					for _, a := range x.sources {
						if len(conns[a]) == 0 {
							t.Errorf("no connection from shard %d's address %s; connections by address: %v", i, a, byAddr)
						}
						from += len(conns[a])
					}
					if fmt.Sprint(from) != own[2] {
						t.Errorf("shard %d owns %s clients, the broker saw %d connections from its addresses %v", i, own[2], from, x.sources)
					}
					total += from
				}
				all := 0
				for _, ids := range conns {
					all += len(ids)
				}
				if all != total || float64(all) == 0 {
					t.Errorf("the broker saw %d connections, %d of them from the shards' source addresses: %v", all, total, byAddr)
				}
				t.Logf("connections by source address, as Mosquitto logged them: %v", byAddr)
			},
		},
		{
			name: "a shard killed: the Job fails, the coordinator names it",
			cfg:  signalInSteady(2, syscall.SIGKILL),
			check: func(t *testing.T, h *netHosts, m *mosquitto, j *netJob, _ counts, _ int) {
				failed(t, j, ReasonBackoffLimit)
				if j.state.Decided != 2 || j.pods[2].code != 137 {
					t.Errorf("the Job was decided by index %d; index 2 exit %d: want index 2's 137 (SIGKILL)", j.state.Decided, j.pods[2].code)
				}
				incomplete(t, j, "shards 2 lost during the run")
				parts(t, j, 0, 1, 3)
			},
		},
		{
			name: "a shard stopped: every shard stops and writes its part",
			cfg:  signalInSteady(1, syscall.SIGTERM),
			check: func(t *testing.T, h *netHosts, m *mosquitto, j *netJob, _ counts, _ int) {
				failed(t, j, ReasonPodFailurePolicy)
				incomplete(t, j, "interrupted")
				parts(t, j, 0, 1, 2, 3)
			},
		},
		{
			name: "a shard's host cut off: incomplete within the coordinator's timeouts",
			cfg: func(h *netHosts) jobConfig {
				return jobConfig{args: netPlanArgs, fault: cutInSteady(h, 3)}
			},
			check: func(t *testing.T, h *netHosts, m *mosquitto, j *netJob, _ counts, _ int) {
				failed(t, j, ReasonPodFailurePolicy)
				incomplete(t, j, "shards 3 lost during the run")
				if p := j.pods[3]; p.code != 3 || !strings.Contains(p.stderr.String(), "the coordinator was lost") {
					t.Errorf("index 3: exit %d, want 3 saying it lost the coordinator\n%s", p.code, p.stderr)
				}
				// Both sides write their parts: the one cut off keeps its
				// own for mqplan merge.
				parts(t, j, 0, 1, 2, 3)
				afterCut(t, h, j)
			},
		},
		{
			name: "the coordinator's host cut off: every shard gives up",
			cfg: func(h *netHosts) jobConfig {
				return jobConfig{args: netPlanArgs, fault: cutInSteady(h, 0)}
			},
			check: func(t *testing.T, h *netHosts, m *mosquitto, j *netJob, _ counts, _ int) {
				failed(t, j, ReasonPodFailurePolicy)
				incomplete(t, j, "shards 1, 2, 3 lost during the run")
				for _, p := range j.pods[1:] {
					if p.code != 3 || !strings.Contains(p.stderr.String(), "the coordinator was lost") {
						t.Errorf("index %d: exit %d, want 3 saying it lost the coordinator\n%s", p.index, p.code, p.stderr)
					}
				}
				// Every shard keeps its own part, for mqplan merge.
				parts(t, j, 0, 1, 2, 3)
				afterCut(t, h, j)
			},
		},
		{
			// Another machine of the cluster runs shard 1's very command
			// line, without the token: the plan, run id and build match,
			// and it is refused at its hello all the same.
			name: "an imposter without the token: refused, the run incomplete",
			cfg: func(h *netHosts) jobConfig {
				return jobConfig{args: netPlanArgs, fault: func(t *testing.T, pods []*netPod) {
					var argv []string
					for k := 0; k < len(pods[1].argv); k++ {
						switch a := pods[1].argv[k]; a {
						case "--token-file", "--partial", "--out":
							k++ // and its value: the imposter keeps nothing
						default:
							argv = append(argv, a)
						}
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					var out syncBuffer
					cmd := h.command(ctx, h.broker.ns, "", pods[1].env, argv...)
					cmd.Stdout, cmd.Stderr = &out, &out
					err := cmd.Run()
					if code := exitCode(cmd); code != 2 || !strings.Contains(out.String(), "authentication failed: the shard has no secret") {
						t.Errorf("the imposter: exit %d (%v), want 2, refused for having no token\n%s", code, err, &out)
					}
				}}
			},
			check: func(t *testing.T, h *netHosts, m *mosquitto, j *netJob, _ counts, _ int) {
				failed(t, j, ReasonPodFailurePolicy)
				incomplete(t, j, "mqplan: refused a peer at "+h.broker.addr+":")
				incomplete(t, j, "1 peers failed authentication")
				for _, p := range j.pods[1:] {
					if p.code != 0 {
						t.Errorf("index %d: exit %d, want 0: the genuine shards were not troubled\n%s", p.index, p.code, p.stderr)
					}
				}
			},
		},
		{
			name: "a coordinator scheduled late: the shards wait for it",
			cfg: func(h *netHosts) jobConfig {
				return jobConfig{args: netPlanArgs, coordinatorLate: 2 * time.Second}
			},
			check: func(t *testing.T, h *netHosts, m *mosquitto, j *netJob, _ counts, _ int) {
				if !j.state.Done || j.state.Condition != batchv1.JobComplete || j.pods[0].code != 0 {
					t.Fatalf("the Job: %+v, index 0 exit %d: want Complete, exit 0\n%s", j.state, j.pods[0].code, j.logs())
				}
				if c := readCounts(t, j.pods[0].report()); !c.exact() {
					t.Errorf("index 0's report %+v: want complete and exact", c)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newNetHosts(t, n, names)
			m := h.startMosquitto()
			var single counts
			if tt.one {
				single = h.runOne(t, bin, b)
			}
			mark := m.mark()
			j := h.runNetJob(t, bin, b, tt.cfg(h))
			t.Logf("the Job: %s (%s) after %v; exit codes by index %v", j.state.Condition, j.state.Reason, j.took.Round(time.Millisecond), j.codes())
			tt.check(t, h, m, j, single, mark)
		})
	}
}

// codes are the pods' exit codes by index.
func (j *netJob) codes() []int32 {
	out := make([]int32, len(j.pods))
	for i, p := range j.pods {
		out[i] = p.code
	}
	return out
}

// runOne runs the Job's plan, with the Job's broker and the test's
// arguments, as one process on shard 0's host, and returns its figures.
func (h *netHosts) runOne(t *testing.T, bin string, b *Bundle) counts {
	t.Helper()
	p, local := startPod(t, b, 0)
	s, err := ParseShardArgv(p.Argv)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, f := range s.Flags {
		if !slices.Contains(pendingFlags, f[0]) {
			args = append(args, "--"+f[0], f[1])
		}
	}
	out := t.TempDir() + "/one.json"
	args = append(append(append([]string{bin, "run"}, args...), netPlanArgs...), "--quiet", "--out", "json="+out, local(s.Plan))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr syncBuffer
	cmd := h.command(ctx, h.shards[0].ns, "", []string{"HOSTNAME=one"}, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("mqplan %q: %v\n%s\n%s", args, err, &stdout, &stderr)
	}
	return readCounts(t, out)
}
