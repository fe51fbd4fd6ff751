package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/mqplan/mqplan/phase"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/plans"
)

// faultPlan is the plan every fault case runs: ten publishers, each with
// its own subscriber, QoS 1, 20 messages a second each, over a 3 s steady
// phase. Its own thresholds are the ones a user would write; the built-in
// checks come on top. {{SUB}} and {{PUB}} take extra group lines
// (reconnect, credentials). disturbance: fail keeps a fault that shows as
// latency (a paused or delaying broker) a FAIL on a busy machine too.
const faultPlan = `name: faults
broker: {connect_timeout: 2s}
disturbance: fail
groups:
  - name: sub
    count: 10
    client_id: "fsub-%i"
    subscribe: {topic: "faults/%i", qos: 1}
{{SUB}}
  - name: pub
    count: 10
    client_id: "fpub-%i"
    publish: {topic: "faults/%i", qos: 1, size: 256B, every: 50ms}
{{PUB}}
duration: 3s
drain: 2s
thresholds:
  - p99 < 500ms
  - loss_rate == 0 and dup_rate == 0
`

// faultReport is what a fault case reads back from mqplan's JSON report.
type faultReport struct {
	Verdict       string           `json:"verdict"`
	Summary       string           `json:"summary"`
	Warnings      []string         `json:"warnings"`
	ErrorSamples  []string         `json:"error_samples"`
	InFlightAtEnd int64            `json:"in_flight_at_end"`
	Elapsed       json.RawMessage  `json:"elapsed"`
	Groups        []map[string]any `json:"groups"`
	Metrics       struct {
		Top    map[string]any            `json:"top"`
		Phases map[string]map[string]any `json:"phases"`
	} `json:"metrics"`
	Thresholds []struct {
		Expr    string `json:"expr"`
		Builtin bool   `json:"builtin"`
		Pass    bool   `json:"pass"`
	} `json:"thresholds"`
}

// n reads a count from the top-level metrics.
func (r *faultReport) n(name string) int64 { return count(r.Metrics.Top, name) }

// dur reads a duration from the top-level metrics (0 when absent).
func (r *faultReport) dur(name string) time.Duration {
	s, _ := r.Metrics.Top[name].(string)
	d, _ := time.ParseDuration(s)
	return d
}

func count(m map[string]any, name string) int64 {
	f, _ := m[name].(float64)
	return int64(f)
}

// failed lists the thresholds that failed, built-in ones marked.
func (r *faultReport) failed() []string {
	var out []string
	for _, t := range r.Thresholds {
		if !t.Pass {
			if t.Builtin {
				out = append(out, t.Expr+" (built in)")
			} else {
				out = append(out, t.Expr)
			}
		}
	}
	return out
}

// errorsMention reports whether an error sample contains s.
func (r *faultReport) errorsMention(s string) bool {
	for _, e := range r.ErrorSamples {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}

// faultRun is one mqplan run started by a fault case.
type faultRun struct {
	t      *testing.T
	dir    string
	steady chan struct{} // closed at the first steady-phase progress line
	ticks  chan struct{} // one per progress line after that
	done   chan int      // the exit code
	stdout *pipe
}

// startFaultRun writes the plan (with extra lines for the sub and pub
// groups) and runs it against url with a JSON report.
func startFaultRun(t *testing.T, url, sub, pub string) *faultRun {
	t.Helper()
	dir := t.TempDir()
	text := strings.NewReplacer("{{SUB}}", sub, "{{PUB}}", pub).Replace(faultPlan)
	path := filepath.Join(dir, "faults.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := startCmd(t, "run", "--broker", url, "--json", filepath.Join(dir, "report.json"), path)
	fr := &faultRun{t: t, dir: dir, steady: make(chan struct{}), ticks: make(chan struct{}, 100), done: make(chan int, 1), stdout: cmd.stdout}
	go func() {
		sc := bufio.NewScanner(cmd.stderr)
		inSteady := false
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "[steady") && !inSteady {
				inSteady = true
				close(fr.steady)
				continue
			}
			if inSteady {
				select {
				case fr.ticks <- struct{}{}:
				default:
				}
			}
		}
		// The output ends when the command returns (or the test gave
		// up on it, and the code is not read).
		select {
		case <-cmd.done:
			fr.done <- cmd.code
		case <-time.After(time.Minute):
		}
	}()
	return fr
}

// waitSteady waits for the steady phase to begin.
func (fr *faultRun) waitSteady() {
	fr.t.Helper()
	select {
	case <-fr.steady:
	case <-time.After(30 * time.Second):
		fr.t.Fatalf("no steady-phase progress line within 30s:\n%s", fr.stdout)
	}
}

// waitTick waits for the next progress line (about a second later): the
// run's own clock, so that a fault lasts a measured while without sleeping.
func (fr *faultRun) waitTick() {
	fr.t.Helper()
	select {
	case <-fr.ticks:
	case <-time.After(30 * time.Second):
		fr.t.Fatal("no progress line within 30s")
	}
}

// finish waits for mqplan to exit and reads its report.
func (fr *faultRun) finish() (int, *faultReport) {
	fr.t.Helper()
	var code int
	select {
	case code = <-fr.done:
	case <-time.After(90 * time.Second):
		fr.t.Fatalf("mqplan still running 90s after the fault:\n%s", fr.stdout)
	}
	b, err := os.ReadFile(filepath.Join(fr.dir, "report.json"))
	if err != nil {
		fr.t.Fatalf("no JSON report (exit %d): %v\n%s", code, err, fr.stdout)
	}
	var rep faultReport
	if err := json.Unmarshal(b, &rep); err != nil {
		fr.t.Fatal(err)
	}
	return code, &rep
}

// plannedSteady is the number of messages the fault plan's schedules call
// for in the steady phase.
func plannedSteady(t *testing.T) int64 {
	t.Helper()
	text := strings.NewReplacer("{{SUB}}", "", "{{PUB}}", "").Replace(faultPlan)
	p, err := plans.LoadBytes("faults.yaml", []byte(text), plans.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := plans.Compile(p, plans.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return prog.Phases[phase.Steady].Messages
}

// mosquittoReceived reads Mosquitto's own count of PUBLISH packets
// received from clients ($SYS/broker/publish/messages/received, updated
// every second with sys_interval 1), waiting until it reaches want or 10 s
// pass, and returns the last value seen.
func mosquittoReceived(t *testing.T, url string, want int64) int64 {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "mqtt://"), 5*time.Second)
	if err != nil {
		t.Fatalf("dial mosquitto for $SYS: %v", err)
	}
	var mu sync.Mutex
	var got int64 = -1
	changed := make(chan struct{}, 1)
	c := paho.NewClient(paho.ClientConfig{Conn: conn, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(pr paho.PublishReceived) (bool, error) {
			var v int64
			if _, err := fmt.Sscan(string(pr.Packet.Payload), &v); err == nil {
				mu.Lock()
				got = v
				mu.Unlock()
				select {
				case changed <- struct{}{}:
				default:
				}
			}
			return true, nil
		}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: "faults-sys", CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatalf("connect for $SYS: %v", err)
	}
	defer func() { _ = c.Disconnect(&paho.Disconnect{}) }()
	if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "$SYS/broker/publish/messages/received"}}}); err != nil {
		t.Fatalf("subscribe to $SYS: %v", err)
	}
	for {
		mu.Lock()
		v := got
		mu.Unlock()
		if v == want {
			return v
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return v
		}
	}
}

// TestFaults runs the fault plan against a real broker while a fault
// hits it, and checks the verdict, the exit code and the figures against
// the ground truth: what the schedule called for, and the broker's own
// counters where it survives to tell. Each case is a row of docs/faults.md,
// "Faults and what mqplan reports"; none may pass.
func TestFaults(t *testing.T) {
	planned := plannedSteady(t)
	const reconnect = "    reconnect: {after: 300ms}"
	tests := []struct {
		name string
		// run starts the broker and the run, brings the fault about,
		// and returns the finished run and any ground truth it took.
		run func(t *testing.T) (int, *faultReport)
		// want is the exit code; check looks at the figures.
		want  int
		check func(t *testing.T, r *faultReport)
	}{
		{
			name: "mosquitto killed mid-run: every client lost, the rest of the schedule unsent",
			run:  atSteady((*mosquittotest.Process).Kill),
			want: exitFail,
			check: func(t *testing.T, r *faultReport) {
				if r.n("unsent") == 0 || r.n("clients.lost") != 20 || r.n("disconnects") != 20 {
					t.Errorf("unsent %d clients.lost %d disconnects %d, want unsent > 0 and 20 clients lost", r.n("unsent"), r.n("clients.lost"), r.n("disconnects"))
				}
			},
		},
		{
			name: "mosquitto killed and restarted, clients reconnecting: every client back, the outage lost",
			run: func(t *testing.T) (int, *faultReport) {
				m := mosquittotest.StartProcess(t, mosquittotest.Options{})
				fr := startFaultRun(t, m.MQTT, reconnect, reconnect)
				fr.waitSteady()
				m.Kill()
				fr.waitTick()
				m.Restart()
				return fr.finish()
			},
			want: exitFail,
			check: func(t *testing.T, r *faultReport) {
				if r.n("clients.lost") != 0 || r.n("disconnects") != 20 || r.n("reconnects") != 20 {
					t.Errorf("clients.lost %d disconnects %d reconnects %d, want 0, 20, 20", r.n("clients.lost"), r.n("disconnects"), r.n("reconnects"))
				}
				if r.n("connect.failed") == 0 {
					t.Error("no failed reconnect attempt while the broker was down")
				}
				if r.n("lost") == 0 {
					t.Error("nothing lost across a broker restart without persistence")
				}
			},
		},
		{
			name: "mosquitto paused and resumed: nothing lost, the pause in the latency",
			run: func(t *testing.T) (int, *faultReport) {
				m := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "sys_interval 1"})
				fr := startFaultRun(t, m.MQTT, "", "")
				fr.waitSteady()
				m.Pause()
				paused := time.Now()
				fr.waitTick()
				fr.waitTick()
				m.Resume()
				pause := time.Since(paused)
				code, r := fr.finish()
				if got := r.n("lost"); got != 0 {
					t.Errorf("lost %d", got)
				}
				// A message sent just before the pause waits for all of it.
				if max := r.dur("latency.max"); max < pause-200*time.Millisecond {
					t.Errorf("latency.max %v for a pause of %v", max, pause)
				}
				var sent int64
				for _, ph := range r.Metrics.Phases {
					sent += count(ph, "sent")
				}
				if got := mosquittoReceived(t, m.MQTT, sent); got != sent {
					t.Errorf("mosquitto received %d PUBLISH packets, mqplan sent %d", got, sent)
				}
				return code, r
			},
			want: exitFail,
			check: func(t *testing.T, r *faultReport) {
				if r.n("unsent") != 0 || r.n("duplicates") != 0 || r.n("errors") != 0 {
					t.Errorf("unsent %d duplicates %d errors %d, want 0", r.n("unsent"), r.n("duplicates"), r.n("errors"))
				}
			},
		},
		{
			name: "mosquitto paused for good: the run still ends, what was in flight lost unacknowledged",
			run:  atSteady((*mosquittotest.Process).Pause),
			want: exitFail,
			check: func(t *testing.T, r *faultReport) {
				if r.n("lost_unsent")+r.n("lost_unacked") == 0 || r.n("lost_broker") != 0 {
					t.Errorf("lost %d = %d unsent + %d unacked + %d by broker; a paused broker acknowledges nothing",
						r.n("lost"), r.n("lost_unsent"), r.n("lost_unacked"), r.n("lost_broker"))
				}
				if r.InFlightAtEnd == 0 {
					t.Error("in_flight_at_end = 0 on a broker that stopped acknowledging")
				}
			},
		},
		{
			name: "publishers kicked by the broker: lost for good, the rest of their schedule unsent",
			run: func(t *testing.T) (int, *faultReport) {
				b := embedded(t, broker.Options{})
				fr := startFaultRun(t, b.URL(), "", "")
				fr.waitSteady()
				if n := b.Kick("fpub-"); n != 10 {
					t.Errorf("kicked %d publishers, want 10", n)
				}
				code, r := fr.finish()
				// The broker's own count: every PUBLISH mqplan says it
				// sent and had acknowledged reached the broker.
				if got := b.Stats().MessagesReceived; got < r.n("acked") {
					t.Errorf("broker received %d PUBLISH packets, mqplan had %d acknowledged", got, r.n("acked"))
				}
				return code, r
			},
			want: exitFail,
			check: func(t *testing.T, r *faultReport) {
				if r.n("clients.lost") != 10 || r.n("disconnects") != 10 || r.n("unsent") == 0 {
					t.Errorf("clients.lost %d disconnects %d unsent %d, want 10, 10, > 0", r.n("clients.lost"), r.n("disconnects"), r.n("unsent"))
				}
			},
		},
		{
			name: "session takeover by a second run with the same client ids, on mosquitto",
			run: func(t *testing.T) (int, *faultReport) {
				m := mosquittotest.StartProcess(t, mosquittotest.Options{})
				return takeover(t, m.MQTT)
			},
			want: exitFail,
			// Mosquitto 2.0.11 closes the taken-over connection without a
			// DISCONNECT: all a client sees is the end.
			check: takenOver("lost its connection"),
		},
		{
			name: "session takeover by a second run with the same client ids, on the embedded broker",
			run: func(t *testing.T) (int, *faultReport) {
				b := embedded(t, broker.Options{})
				return takeover(t, b.URL())
			},
			want:  exitFail,
			check: takenOver("session taken over"),
		},
		{
			name: "embedded broker dropping 1 delivery in 50: exactly its drops lost, by the broker",
			run: func(t *testing.T) (int, *faultReport) {
				return withFaults(t, broker.Faults{DropEvery: 50}, func(t *testing.T, r *faultReport, fc broker.FaultCounts) {
					if fc.Dropped == 0 || r.n("lost_broker") != int64(fc.Dropped) || r.n("lost") != int64(fc.Dropped) {
						t.Errorf("lost %d (by broker %d), the broker dropped %d", r.n("lost"), r.n("lost_broker"), fc.Dropped)
					}
				})
			},
			want:  exitFail,
			check: func(t *testing.T, r *faultReport) {},
		},
		{
			name: "embedded broker duplicating 1 delivery in 50: exactly its copies duplicates",
			run: func(t *testing.T) (int, *faultReport) {
				return withFaults(t, broker.Faults{DuplicateEvery: 50}, func(t *testing.T, r *faultReport, fc broker.FaultCounts) {
					if fc.Duplicated == 0 || r.n("duplicates") != int64(fc.Duplicated) {
						t.Errorf("duplicates %d, the broker duplicated %d", r.n("duplicates"), fc.Duplicated)
					}
				})
			},
			want: exitFail,
			check: func(t *testing.T, r *faultReport) {
				if r.n("lost") != 0 {
					t.Errorf("lost %d", r.n("lost"))
				}
			},
		},
		{
			name: "embedded broker delaying every delivery 600ms: the delay in the latency",
			run: func(t *testing.T) (int, *faultReport) {
				return withFaults(t, broker.Faults{Delay: 600 * time.Millisecond}, func(*testing.T, *faultReport, broker.FaultCounts) {})
			},
			want: exitFail,
			check: func(t *testing.T, r *faultReport) {
				if p50 := r.dur("latency.p50"); p50 < 600*time.Millisecond || p50 > 700*time.Millisecond {
					t.Errorf("latency.p50 %v for a 600ms delay", p50)
				}
				if r.n("lost") != 0 || r.n("duplicates") != 0 {
					t.Errorf("lost %d duplicates %d", r.n("lost"), r.n("duplicates"))
				}
			},
		},
		{
			name: "two publishers refused at connect: connect.failed, their schedule unsent",
			run: func(t *testing.T) (int, *faultReport) {
				users := map[string]string{}
				for i := 1; i <= 10; i++ {
					users[fmt.Sprintf("s%d", i)] = "pw"
				}
				for i := 1; i <= 8; i++ {
					users[fmt.Sprintf("p%d", i)] = "pw"
				}
				b := embedded(t, broker.Options{Users: users})
				fr := startFaultRun(t, b.URL(), `    username: "s%i"
    password: pw`, `    username: "p%i"
    password: pw`)
				return fr.finish()
			},
			want: exitFail,
			check: func(t *testing.T, r *faultReport) {
				perClient := planned / 10
				if r.n("connect.failed") != 2 || r.n("unsent") != 2*perClient || r.n("lost_unsent") != 2*perClient {
					t.Errorf("connect.failed %d unsent %d lost_unsent %d, want 2, %d, %d", r.n("connect.failed"), r.n("unsent"), r.n("lost_unsent"), 2*perClient, 2*perClient)
				}
				if !r.errorsMention("bad user name or password") {
					t.Errorf("errors do not name the CONNACK reason: %v", r.ErrorSamples)
				}
			},
		},
		{
			name: "subscribers denied reading by mosquitto's ACL",
			run: func(t *testing.T) (int, *faultReport) {
				acl := filepath.Join(t.TempDir(), "acl")
				// Mosquitto reads the file as root: it drops to its own
				// user otherwise, which cannot read the test's directory.
				if err := os.WriteFile(acl, []byte("topic write faults/#\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				m := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "user root\nacl_file " + acl})
				return startFaultRun(t, m.MQTT, "", "").finish()
			},
			want: exitFail,
			check: func(t *testing.T, r *faultReport) {
				if r.n("received") != 0 || r.n("lost_broker") != planned || r.n("acked") != planned {
					t.Errorf("received %d lost_broker %d acked %d, want 0, %d, %d", r.n("received"), r.n("lost_broker"), r.n("acked"), planned, planned)
				}
			},
		},
		{
			name: "payload over mosquitto's message_size_limit: refused with reason 0x95",
			run: func(t *testing.T) (int, *faultReport) {
				m := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "message_size_limit 100\nsys_interval 1"})
				code, r := startFaultRun(t, m.MQTT, "", "").finish()
				// Mosquitto counts what it received and then refused.
				if got := mosquittoReceived(t, m.MQTT, r.n("sent")); got != r.n("sent") {
					t.Errorf("mosquitto received %d PUBLISH packets, mqplan sent %d", got, r.n("sent"))
				}
				return code, r
			},
			want: exitFail,
			check: func(t *testing.T, r *faultReport) {
				if !r.errorsMention("packet too large (0x95)") {
					t.Errorf("errors do not name reason 0x95: %v", r.ErrorSamples)
				}
				if r.n("received") != 0 || r.n("lost_broker") != planned {
					t.Errorf("received %d lost_broker %d, want 0 and %d", r.n("received"), r.n("lost_broker"), planned)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, r := tt.run(t)
			if code != tt.want {
				t.Errorf("exit %d, want %d (%s)", code, tt.want, r.Summary)
			}
			if r.Verdict == "PASS" {
				t.Errorf("a fault passed: %s", r.Summary)
			}
			// The accounting every fault must keep: the schedule is the
			// truth, and lost adds up by cause.
			steady := r.Metrics.Phases[phase.Steady.String()]
			if s, u := count(steady, "sent"), count(steady, "unsent"); s+u != planned {
				t.Errorf("steady sent %d + unsent %d = %d, the schedule called for %d", s, u, s+u, planned)
			}
			if e := r.n("expected"); e != planned {
				t.Errorf("expected %d, want %d (one delivery a message)", e, planned)
			}
			if l, sum := r.n("lost"), r.n("lost_unsent")+r.n("lost_unacked")+r.n("lost_broker")+r.n("lost_late"); l != sum {
				t.Errorf("lost %d, but unsent %d + unacked %d + by broker %d + late %d = %d", l, r.n("lost_unsent"), r.n("lost_unacked"), r.n("lost_broker"), r.n("lost_late"), sum)
			}
			if r.n("lost_unsent") != r.n("unsent") {
				t.Errorf("lost_unsent %d for %d unsent one-to-one messages", r.n("lost_unsent"), r.n("unsent"))
			}
			tt.check(t, r)
			t.Logf("%s: exit %d, failed: %s; unsent %d lost %d (unsent %d, unacked %d, broker %d) dup %d p99 %v",
				r.Verdict, code, strings.Join(r.failed(), ", "), r.n("unsent"), r.n("lost"), r.n("lost_unsent"), r.n("lost_unacked"), r.n("lost_broker"), r.n("duplicates"), r.dur("latency.p99"))
		})
	}
}

// withFaults runs the fault plan against an embedded broker that injects
// f, and hands the report and the broker's exact fault counts to check.
func withFaults(t *testing.T, f broker.Faults, check func(*testing.T, *faultReport, broker.FaultCounts)) (int, *faultReport) {
	t.Helper()
	b := embedded(t, broker.Options{Faults: f})
	code, r := startFaultRun(t, b.URL(), "", "").finish()
	check(t, r, b.FaultCounts())
	return code, r
}

// atSteady runs the fault plan against a Mosquitto of its own and does
// fault to it as soon as the steady phase begins.
func atSteady(fault func(*mosquittotest.Process)) func(*testing.T) (int, *faultReport) {
	return func(t *testing.T) (int, *faultReport) {
		m := mosquittotest.StartProcess(t, mosquittotest.Options{})
		fr := startFaultRun(t, m.MQTT, "", "")
		fr.waitSteady()
		fault(m)
		return fr.finish()
	}
}

// embedded starts an embedded broker with opts until the test ends.
func embedded(t *testing.T, opts broker.Options) *broker.Broker {
	t.Helper()
	b, err := broker.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(5 * time.Second) })
	return b
}

// takenOver checks a run whose publishers' sessions a second run took
// over: every publisher lost for good, the rest of its schedule unsent,
// and the errors saying so with mention.
func takenOver(mention string) func(*testing.T, *faultReport) {
	return func(t *testing.T, r *faultReport) {
		if !r.errorsMention(mention) {
			t.Errorf("errors do not mention %q: %v", mention, r.ErrorSamples)
		}
		if r.n("clients.lost") != 10 || r.n("unsent") == 0 {
			t.Errorf("clients.lost %d unsent %d, want 10 and > 0", r.n("clients.lost"), r.n("unsent"))
		}
	}
}

// takeover runs the fault plan against url and, once it is steady, a
// second run whose publishers have the same client ids and so take over
// the first run's sessions.
func takeover(t *testing.T, url string) (int, *faultReport) {
	t.Helper()
	fr := startFaultRun(t, url, "", "")
	fr.waitSteady()
	if other := runCmd(t, "run", "--quiet", "--broker", url, writePlan(t, takeoverPlan)); other.code != exitPass {
		t.Errorf("the taking-over run exited %d:\n%s", other.code, other.stdout)
	}
	return fr.finish()
}

// takeoverPlan connects publishers with the fault plan's client ids,
// publishing where the fault plan's subscribers do not listen.
const takeoverPlan = `name: takeover
groups:
  - name: pub
    count: 10
    client_id: "fpub-%i"
    publish: {topic: "other/%i", qos: 1, size: 256B, every: 50ms}
duration: 1s
drain: 1s
`

// writePlan writes text as a plan file in a fresh directory.
func writePlan(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(path, []byte(strings.NewReplacer("{{SUB}}", "", "{{PUB}}", "").Replace(text)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
