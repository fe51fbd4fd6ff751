// Package runner executes a compiled plan against a broker: it connects
// the clients at their ramps (subscribers first), waits for every SUBACK,
// publishes on open-loop schedules, measures every delivery against what
// the subscriptions imply, answers MQTT 5 requests and matches their
// answers (reqresp.go), and returns the statistics. It neither parses
// YAML nor judges thresholds nor prints tables.
package runner

import (
	"context"
	"errors"
	"fmt"
	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/plans"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Options configure a run beyond what the plan says.
type Options struct {
	// BrokerURL, when set, replaces the plan's broker URLs (--broker).
	BrokerURL string
	// Embedded starts the in-process broker a plan whose broker URL is
	// "embedded" runs against (cmd/mqplan starts package broker's). The run
	// closes it when it ends and reports its counters in stats.Stats.Broker. It
	// is injected so that the runner, which measures any broker, does not
	// link one in; nil makes such a plan an error.
	Embedded func() (EmbeddedBroker, error)
	// Progress, when set, is called about once a second with live figures.
	// It runs on the snapshot goroutine and must return quickly.
	Progress func(Progress)
	// Second, when set, is given each second of the timeline as it is
	// taken (the same value Stats.Timeline will hold, Groups included), so
	// that a live view (package live's Prometheus exporter) follows the
	// run with the exact per-second counts. It runs on the snapshot
	// goroutine, never on a client's, must return quickly and must not
	// modify the Second.
	Second func(stats.Second)
	// Latency, when set, is given, for each second and each group that
	// received deliveries in it, the histogram of their end-to-end
	// latencies (µs, as stats.NewHistogram's), just before Second is given
	// that second: a live view keeps the whole distribution without
	// recording anything per message itself. It runs on the snapshot
	// goroutine; h is reset once it returns, so merge it, never keep it.
	Latency func(group int, h *hdrhistogram.Histogram)
	// Ack, when set, is given, for each second and each group whose QoS
	// 1/2 publishes were acknowledged in it, the histogram of their
	// PUBLISH → PUBACK/PUBCOMP latencies (µs), as Latency is given the
	// end-to-end ones. Unset, no per-second ack histogram is kept.
	Ack func(group int, h *hdrhistogram.Histogram)
	// LostSoFar, when set, is given, for each second and every group
	// (just before Second), the deliveries to the group's clients lost so
	// far: those implied by the messages whose intended send time is more
	// than the plan's drain ago (at least a second: the time the run
	// gives a message to arrive) or that were never sent, less the
	// first-time deliveries of them. A message a publisher skips because
	// it lost its connection for good (or never had one) counts once its
	// intended time is that far past, as a sent one would, not only when
	// publishing is over. A message that arrives later than
	// that takes its delivery back, so the figure may go down. The last
	// second of the run (taken when it is over) counts every message, and
	// equals the sum over phases of the group's stats.Metrics.Lost
	// unless a phase received more first-time deliveries than it
	// expected (each phase's Lost is at least 0, this sum as a whole).
	LostSoFar func(group int, lost int64)
	// InterruptDrain bounds the drain after an interruption (default 2s):
	// a user who pressed Ctrl-C wants the report soon.
	InterruptDrain time.Duration
	// Shard, when set, makes the run one shard of a sharded run
	// (shard.go): only its clients run, and it meets the others at the
	// barriers.
	Shard *Shard
	// ProtocolOption, when set, is the command-line option that sets the
	// MQTT version (mqplan sub's -V): hints that suggest another version
	// name it ("try -V 5") instead of the plan's broker.protocol.
	ProtocolOption string
	// tap, set by this package's tests only, keeps the run's every
	// record call (recorder_tap.go).
	tap *recorderTap
}

// EmbeddedBroker is what a run needs of an in-process broker: where to
// connect, its own counters for the report, and a bounded stop.
type EmbeddedBroker interface {
	// URL is the address clients connect to, mqtt://host:port.
	URL() string
	// Stats returns the broker's counters, read once the run has ended.
	Stats() stats.Broker
	// Close stops the broker within timeout.
	Close(timeout time.Duration) error
}

// errNoEmbedded is Run's error for a plan that needs the embedded broker
// when Options.Embedded was not set.
var errNoEmbedded = errors.New(`the plan's broker is "embedded" but no embedded broker was provided (runner.Options.Embedded is nil)`)

// Progress is the live view of a run, once a second.
type Progress struct {
	Phase     phase.Phase
	Elapsed   time.Duration
	Connected int
	Clients   int
	// SendRate and RecvRate are messages per second over the last second.
	SendRate, RecvRate float64
	// Lost is the number of clients whose connection is down right now
	// (dropped and not back yet, or given up).
	Lost int
	// Subscribed is the number of clients with at least one subscription
	// the broker granted.
	Subscribed int
	// P99 is the latency of the last second's deliveries.
	P99    time.Duration
	Errors int64
	// Sent and Received are totals since the run started.
	Sent, Received int64
}

// run is the state of one execution.
type run struct {
	prog    *plans.Program
	opts    Options
	rec     *recorder
	pattern []byte
	// checks finds and checks templated payloads and their headers.
	checks payloadChecks
	epoch  time.Time
	// epochWall is the epoch in Unix ns: message headers carry wall-clock
	// intended times so that a subscriber in another process can use them.
	epochWall int64
	// listenOnly is set for plans without publishers (mqplan sub): their
	// deliveries come from other processes and are measured as such.
	listenOnly bool
	clients    []*client
	shares     []*shareState
	// procs sample the broker's and mqplan's CPU and memory (snapshot
	// goroutine only).
	procs procSamplers
	// counters sample the broker's own counters ($SYS, Prometheus);
	// countersStart is their reading before the first publish.
	counters      counterSources
	countersStart brokerstat.Counters
	// resent counts the PUBLISH packets sent again on a resumed session.
	resent atomic.Int64
	// resentCounted counts those of them at QoS 1 without the retain
	// flag: the ones Mosquitto's publish/messages/received counts.
	resentCounted atomic.Int64
	// fences counts the fences clean subscribers published, fencesBack
	// those that came back (clean_run.go); cleanOverflow is set when a
	// clean subscriber held more deliveries than it may, and cleanWhy
	// says why the clean accounting is incomplete, if it is.
	fences, fencesBack atomic.Int64
	cleanOverflow      atomic.Bool
	cleanWhy           string
	timeout            time.Duration

	phase     atomic.Uint32
	pubStart  atomic.Int64 // ns since epoch when warmup starts
	connected atomic.Int64
	// down counts clients whose connection dropped and is not back.
	down atomic.Int64
	// subscribed counts clients with at least one subscription granted.
	subscribed atomic.Int64
	// subscribeErr is the first SUBSCRIBE that got no SUBACK, which says
	// why a group could not subscribe better than the first error of the
	// run (its connection's loss, recorded first).
	subscribeErr atomic.Pointer[string]
	// groupConns splits connected and down by plan group, for the
	// timeline (their sums are connected and down).
	groupConns []groupConns
	// groups holds what the broker granted each group, for the notices.
	groups []groupGrants

	notesMu sync.Mutex
	notes   []string

	// phaseStart and phaseEnd are written by the orchestrating goroutine
	// only, and read when the run is over.
	phaseStart [phase.Count]time.Duration
	phaseEnd   [phase.Count]time.Duration

	errMu    sync.Mutex
	errKinds []errorKind
	// errOther counts errors past the first maxErrorKinds kinds.
	errOther int64
	// inflightAtEnd and drainQuiet are what drain saw (Stats fields of the
	// same names), written by the orchestrating goroutine.
	inflightAtEnd int64
	drainQuiet    time.Duration
	// drainEndAt is when drain ended (since the epoch, 0 until it has),
	// drainLen how long it lasted and drainEndRate the deliveries per
	// second in its last second (late.go).
	drainEndAt, drainLen time.Duration
	drainEndRate         int64

	timelineMu sync.Mutex
	timeline   []stats.Second
	// ctx is the run's context, for reconnects started by connection losses.
	ctx context.Context
	// reconnects counts the reconnect goroutines; reconnecting is the
	// same count, readable.
	reconnects   sync.WaitGroup
	reconnecting atomic.Int64
	// sentTotal and recvTotal are the snapshot goroutine's running totals.
	sentTotal, recvTotal int64
	// unsentMu orders the counting of skipped messages by the snapshots
	// (countSkipped) with the final count of unsent ones (countUnsent);
	// unsentCutoff is when publishing stopped (an offset from the start
	// of warmup), once cutoffKnown; unsentDone is set once countUnsent
	// has counted the rest.
	unsentMu     sync.Mutex
	unsentCutoff time.Duration
	cutoffKnown  bool
	unsentDone   bool
	// sh is the run's sharding (shard.go).
	sh shardRun
}

// groupConns is one group's share of run.connected and run.down.
type groupConns struct {
	connected, down atomic.Int64
}

// now is the monotonic time since the run's epoch, in ns.
func (r *run) now() int64 { return int64(time.Since(r.epoch)) }

func (r *run) at() time.Duration { return time.Since(r.epoch) }

// Run executes prog and returns what it measured. A run that starts but
// cannot complete (no client of a group connects, the context is
// cancelled) still returns its Stats with Incomplete or Interrupted set;
// the error is for runs that could not start at all.
func Run(ctx context.Context, prog *plans.Program, opts Options) (*stats.Stats, error) {
	if err := checkSupported(prog, opts); err != nil {
		return nil, err
	}
	if err := checkShard(opts.Shard, len(prog.Clients)); err != nil {
		return nil, err
	}
	r := &run{
		prog:    prog,
		opts:    opts,
		rec:     newRecorder(len(prog.Groups), prog.Drain),
		pattern: padPattern(prog.MaxPayload),
		checks:  newPayloadChecks(prog),
		timeout: prog.Plan.Broker.ConnectTimeout,
	}
	if r.timeout <= 0 {
		r.timeout = 10 * time.Second
	}
	r.rec.trackAck = opts.Ack != nil
	r.rec.tap = opts.tap
	r.rec.withStages(len(prog.Stages))
	if r.sh.shard = opts.Shard; r.sh.shard != nil {
		r.rec.sentBy = make([]int64, len(prog.Clients))
		if r.sh.shard.ShardOf != nil {
			r.rec.withShards(r.sh.shard.Index, r.sh.shard.Count)
		}
		r.sh.started = make(chan struct{})
	}
	st := &stats.Stats{Started: time.Now()}

	var broker EmbeddedBroker
	urls := prog.Plan.Broker.URLs
	if opts.BrokerURL != "" {
		urls = []string{opts.BrokerURL}
	}
	if len(urls) == 1 && urls[0] == plans.Embedded {
		if opts.Embedded == nil {
			return nil, errNoEmbedded
		}
		b, err := opts.Embedded()
		if err != nil {
			return nil, fmt.Errorf("start embedded broker: %w", err)
		}
		broker = b
		defer b.Close(5 * time.Second)
		urls = []string{b.URL()}
	}
	st.BrokerURL = strings.Join(urls, ",")
	targets, err := newTargets(urls, prog.Plan.Broker)
	if err != nil {
		return nil, err
	}

	if err := r.startEpoch(ctx); err != nil {
		st.Incomplete = err.Error()
		return st, nil
	}
	if r.listenOnly = prog.Publishers() == 0; r.listenOnly {
		// Room for the padding of other processes' payloads up to 1 MiB.
		r.pattern = padPattern(1 << 20)
		// Another process's messages may carry their header in a user
		// property (mqplan pub -m with MQTT 5).
		r.checks.property = true
	}
	r.groups = make([]groupGrants, len(prog.Groups))
	r.groupConns = make([]groupConns, len(prog.Groups))
	for i := range r.groups {
		r.groups[i].minGranted.Store(3)
	}
	r.clients = make([]*client, len(prog.Clients))
	r.shares = make([]*shareState, prog.ShareGroups())
	for i := range r.shares {
		r.shares[i] = &shareState{streams: map[uint32]*stream{}}
	}
	for i := range prog.Clients {
		pc := &prog.Clients[i]
		c := &client{plan: pc, reconnected: make(chan struct{}, 1), req: newReqState(prog, pc), cur: newCursors(pc)}
		if len(pc.Subscriptions) > 0 {
			c.streams = map[uint32]*stream{}
			c.share = r.shareFor(pc)
			if c.share != nil {
				c.expects = map[uint32]bool{}
			}
			for _, s := range pc.Subscriptions {
				c.retainAsPublished = c.retainAsPublished || s.RetainAsPublished
			}
		}
		r.clients[i] = c
	}
	r.setupClean()

	watch := prog.Plan.Broker.Metrics
	if r.sh.shard != nil && r.sh.shard.Index != 0 && watch.HasProcess() {
		// Shard 0 alone watches the broker (startCounters): its process
		// is one host's, shard 0's when it names a pid or a process, and
		// on another shard's host that pid is another process or none.
		w := *watch
		w.PID, w.Process = 0, ""
		watch = &w
	}
	if r.procs, err = newProcSamplers(watch); err != nil {
		st.Incomplete = err.Error()
		return st, nil
	}

	snapDone := make(chan struct{})
	snapStop := make(chan struct{})
	go r.snapshots(snapStop, snapDone)

	incomplete := r.execute(ctx, targets)
	r.allDrained(ctx)
	if r.countersStart.Sampled() || r.counters.start != nil {
		st.CountersStart = r.countersStart
		st.CountersEnd = r.captureCounters(true, ctx.Err() != nil)
		st.CountersUnchanged = r.counters.unchanged
	}
	r.stopCounters()

	close(snapStop)
	<-snapDone
	st.Elapsed = r.at()
	st.Phases = r.rec.merge()
	st.Clock = r.rec.shardPairs()
	for i := range st.Phases {
		st.Phases[i].Start, st.Phases[i].End = r.phaseStart[i], r.phaseEnd[i]
	}
	st.Stages = r.stageStats()
	st.Groups = r.groupInfo()
	st.Timeline = r.timeline
	st.Interrupted = ctx.Err() != nil
	st.Incomplete = incomplete
	st.BrokerGone = r.procs.brokerGone
	st.ErrorSamples = r.errorSamples()
	st.InFlightAtEnd = r.inflightAtEnd
	st.DrainQuiet = r.drainQuiet
	st.DrainEndRate, st.Drain = r.drainEndRate, r.drainLen
	st.Procs = runtime.GOMAXPROCS(0)
	if broker != nil {
		bs := broker.Stats()
		st.Broker = &bs
	}
	st.Cross = r.crossCounts()
	if r.sh.shard == nil {
		// A shard's own counts are a part of what the broker saw: the
		// check runs on the merged run (CrossCheck).
		r.crossCheck(st)
	}
	st.Notices = r.notices()
	return st, nil
}

// checkSupported refuses, before anything connects, what this runner
// cannot do yet, with a message naming the plan field.
func checkSupported(prog *plans.Program, opts Options) error {
	for _, g := range prog.Plan.Groups {
		if g.Protocol != 0 && (g.Protocol < 3 || g.Protocol > 5) {
			return fmt.Errorf("group %q: protocol %d: must be 3, 4 or 5", g.Name, g.Protocol)
		}
	}
	urls := prog.Plan.Broker.URLs
	if opts.BrokerURL != "" {
		urls = []string{opts.BrokerURL}
	}
	var real []string
	for _, u := range urls {
		if u != plans.Embedded {
			real = append(real, u)
		}
	}
	_, err := newTargets(real, prog.Plan.Broker)
	return err
}

// shareFor returns the share group state a client records into when all
// its subscriptions are shared (see client.share).
func (r *run) shareFor(pc *plans.Client) *shareState {
	key := -1
	for _, s := range pc.Subscriptions {
		if s.ShareKey < 0 {
			return nil // it has its own subscription: per-client streams
		}
		if key < 0 {
			key = s.ShareKey
		}
	}
	if key < 0 {
		return nil
	}
	return r.shares[key]
}

// current returns the phase the run is in.
func (r *run) current() phase.Phase { return phase.Phase(r.phase.Load()) }

// setPhase starts phase p now, ending the previous one.
func (r *run) setPhase(p phase.Phase) {
	now := r.at()
	cur := r.current()
	if p <= cur {
		return
	}
	for i := cur; i < p; i++ {
		if r.phaseEnd[i] == 0 {
			r.phaseEnd[i] = now
		}
		if r.phaseStart[i+1] == 0 {
			r.phaseStart[i+1] = now
		}
	}
	r.phase.Store(uint32(p))
}

// maxErrorKinds bounds the kinds of error the report lists one by one.
const maxErrorKinds = 10

// errorKind is one kind of error: the same message but for the client id
// ("pub-\x00 lost its connection: session taken over"), its first
// occurrence as it was, and how many there were.
type errorKind struct {
	key, first string
	n          int64
}

// fail counts one error of client pc (nil for the run's own) in the
// current phase and keeps its message for the report, grouped by kind, so
// that the report's list of errors and its "N in all" (the errors metric)
// always agree.
func (r *run) fail(pc *plans.Client, err error) {
	client, group, id := 0, 0, ""
	if pc != nil {
		client, group, id = pc.Index, pc.Group, pc.ID
	}
	r.rec.recordError(client, r.current(), group)
	msg := err.Error()
	key := msg
	if id != "" {
		key = strings.ReplaceAll(msg, id, "\x00")
	}
	r.errMu.Lock()
	defer r.errMu.Unlock()
	for i := range r.errKinds {
		if r.errKinds[i].key == key {
			r.errKinds[i].n++
			return
		}
	}
	if len(r.errKinds) >= maxErrorKinds {
		r.errOther++
		return
	}
	r.errKinds = append(r.errKinds, errorKind{key: key, first: msg, n: 1})
}

// errorSamples renders the error kinds for the report: each first message
// with how many more of its kind followed, and a last line for the kinds
// past maxErrorKinds.
func (r *run) errorSamples() []string {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	var out []string
	for _, k := range r.errKinds {
		s := k.first
		if k.n > 1 {
			s += fmt.Sprintf(" (and %d more like it)", k.n-1)
		}
		out = append(out, s)
	}
	if r.errOther > 0 {
		out = append(out, fmt.Sprintf("%d more of other kinds", r.errOther))
	}
	return out
}

// execute runs the phases in order and returns why the run could not
// complete, or "".
func (r *run) execute(ctx context.Context, targets []mqttc.Target) string {
	incomplete := ""
	r.ctx = ctx
	r.phaseStart[phase.Connect] = 0

	pingStop := make(chan struct{})
	pingDone := make(chan struct{})
	go r.pinger(pingStop, pingDone)
	defer func() { close(pingStop); <-pingDone }()

	// connect: subscribing groups first, then the rest, so that
	// subscribers are never the ones still connecting when a plan's
	// connection budget runs out.
	for _, stage := range plans.ConnectStages {
		if ctx.Err() != nil {
			break
		}
		r.connectStage(ctx, stage, targets)
		if msg := r.failedGroups(ctx, stage); msg != "" {
			incomplete = msg
			break
		}
	}
	// subscribe: every SUBACK in before the first publish.
	if incomplete == "" && ctx.Err() == nil {
		r.setPhase(phase.Subscribe)
		r.subscribeAll(ctx)
		if ctx.Err() == nil {
			incomplete = r.unsubscribedGroups(ctx)
		}
	}
	if incomplete == "" && ctx.Err() == nil {
		// The monitor connects once the plan's clients have: a broker
		// with no connection to spare refuses the monitor (a notice),
		// never a plan client.
		r.startCounters(ctx, r.prog.Plan.Broker.Metrics, targets[0])
		r.countersStart = r.captureCounters(false, false)
		r.publishPhases(ctx)
	} else {
		r.setPhase(phase.Drain)
	}
	r.sh.markStarted() // a delivery still waiting for the start waits no more
	if incomplete == "" {
		incomplete = r.syncFailed()
	}
	r.setPhase(phase.Disconnect)
	r.disconnectAll()
	r.phaseEnd[phase.Disconnect] = r.at()
	if incomplete == "" {
		incomplete = r.cleanWhy
	}
	return incomplete
}

// failedGroups names the groups of a stage of which no client connected
// (on any shard).
func (r *run) failedGroups(ctx context.Context, stage plans.ConnectStage) string {
	ok := make([]int64, len(r.prog.Groups))
	for gi, gp := range r.prog.Groups {
		for _, c := range r.clients[gp.First : gp.First+gp.Count] {
			if c.live.Load() != nil {
				ok[gi]++
			}
		}
	}
	if ok = r.sumOverShards(ctx, fmt.Sprintf("connect %d", stage), ok); ok == nil {
		return r.syncFailed()
	}
	var msgs []string
	for gi, gp := range r.prog.Groups {
		if gp.Stage != stage || gp.Count == 0 {
			continue
		}
		if ok[gi] == 0 {
			msgs = append(msgs, fmt.Sprintf("group %s: none of its %d clients could connect", gp.Name, gp.Count))
		}
	}
	return r.incompleteBecause(msgs)
}

// connectStage connects the clients of one stage, each group at its own
// rate, and waits until every attempt has finished (each is bounded by the
// connect timeout).
func (r *run) connectStage(ctx context.Context, stage plans.ConnectStage, targets []mqttc.Target) {
	var order []*client
	for _, gp := range r.prog.Groups {
		if gp.Stage != stage {
			continue
		}
		for _, c := range r.clients[gp.First : gp.First+gp.Count] {
			if r.owns(c.plan.Index) {
				order = append(order, c)
			}
		}
	}
	slices.SortStableFunc(order, func(a, b *client) int {
		return int(a.plan.ConnectAt - b.plan.ConnectAt)
	})
	start := r.at()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var wg sync.WaitGroup
	for _, c := range order {
		if !r.sleepUntil(ctx, timer, start+c.plan.ConnectAt) {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.connect(ctx, c, targets[c.plan.Index%len(targets)])
		}()
	}
	wg.Wait()
}

// sleepUntil waits on timer until offset at from the epoch, and reports
// false if ctx ended first. Millisecond precision is enough for what it
// paces (connection ramps, phase boundaries); publishes use the pacer.
func (r *run) sleepUntil(ctx context.Context, timer *time.Timer, at time.Duration) bool {
	if wait := at - r.at(); wait > 0 {
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
	}
	return ctx.Err() == nil
}

// connect dials and sends CONNECT for one client, recording the outcome.
func (r *run) connect(ctx context.Context, c *client, t mqttc.Target) {
	pc := c.plan
	group := pc.Group
	g := &r.prog.Plan.Groups[group]
	opts := mqttc.Options{
		ClientID:      pc.ID,
		Username:      pc.Username,
		Keepalive:     g.Keepalive,
		CleanStart:    g.CleanStart,
		SessionExpiry: g.SessionExpiry,
		Timeout:       r.timeout,
		SourceAddr:    pc.SourceAddr,
		Version:       byte(g.Protocol),
	}
	if pub := pc.Publish; pub != nil && pub.Max {
		opts.Inflight = pub.Inflight
		c.wake = make(chan struct{}, 1)
	}
	if pw := pc.Password.Reveal(); pw != "" {
		opts.Password = []byte(pw)
	}
	if w := g.Will; w != nil {
		opts.Will = &mqttc.Will{Topic: pc.WillTopic, Payload: []byte(w.Payload), QoS: w.QoS, Retain: w.Retain}
	}
	h := mqttc.Handlers{
		Acked: func(a mqttc.Ack) {
			if a.Token == fenceToken {
				return // a clean subscriber's fence (clean_run.go)
			}
			if cp := c.cleanPub; cp != nil && uint32(a.Token) > cp.acked.Load() {
				cp.acked.Store(uint32(a.Token))
			}
			ph, _ := r.sentAsAt(pc.Publish, c.ackCursor(), a.Token)
			r.rec.recordAck(pc.Index, ph, group, a.Latency, a.Reason.Failed())
			if pc.Publish != nil && pc.Publish.Max {
				ackedWake(c)
			}
			if a.QoS == 2 && a.AckQoS == 1 {
				r.groups[group].pubDowngraded.Add(1)
				r.rec.recordEvent(pc.Index, ph, group, evQoSDowngrade, 0)
			}
			if a.Reason.Failed() {
				r.fail(pc, fmt.Errorf("%s: the broker refused a PUBLISH: %s", pc.ID, a.Reason))
			}
		},
		Closed: func(err error) {
			if err != nil {
				r.lost(c, err)
			}
		},
	}
	if len(pc.Subscriptions) > 0 {
		if r.checks.property {
			h.DeliverProps = func(props, payload []byte, retained bool) { r.receiveProps(c, props, payload, retained) }
		} else {
			h.Deliver = func(payload []byte, retained bool) { r.receive(c, payload, retained) }
		}
		h.Request = func(payload []byte, retained bool, req mqttc.Request[[]byte]) { r.request(c, payload, retained, req) }
	}
	c.target, c.opts, c.handlers = t, opts, h
	r.dial(ctx, c)
}

// dial connects c with its stored target and options (a first connect or
// a reconnect) and records the outcome; it reports whether it connected.
func (r *run) dial(ctx context.Context, c *client) bool {
	pc := c.plan
	old := c.live.Load()
	if old != nil {
		// A reconnect: the old connection was lost, so it is closed and
		// its reader returns at once (its handlers never block). The new
		// reader must not start before it has, as both run this client's
		// handlers on the same receive state. A cancelled run goes on to
		// the dial, which then fails as cancelled.
		select {
		case <-old.ReaderDone():
		case <-ctx.Done():
		}
	}
	t0 := r.at()
	mc, err := mqttc.Dial(ctx, c.target, c.opts, r.now, c.handlers)
	if err != nil {
		r.rec.recordEvent(pc.Index, r.current(), pc.Group, evConnectFailed, 0)
		r.fail(pc, fmt.Errorf("connect %s to %s: %w", pc.ID, c.target.URL, cleanErr(err)))
		return false
	}
	r.rec.recordEvent(pc.Index, r.current(), pc.Group, evConnectOK, r.at()-t0)
	if old != nil {
		r.resume(c, old, mc)
		c.abandoned = old.TakeUnacked(c.abandoned)
		if cp := c.cleanPub; cp != nil {
			for _, tok := range c.abandoned {
				if ab := cp.abandoned.Load(); ab == 0 || uint32(tok) < ab {
					cp.abandoned.Store(uint32(tok))
				}
			}
		}
	}
	if mc.SharedSubsUnavailable() && c.share != nil {
		r.note("the broker says shared subscriptions are not available (CONNACK Shared Subscription Available = 0): the $share subscriptions will be refused or receive nothing")
	}
	c.live.Store(mc)
	gc := &r.groupConns[pc.Group]
	if c.lost.Swap(false) {
		r.down.Add(-1)
		gc.down.Add(-1)
	}
	c.ready.Store(true)
	r.connected.Add(1)
	gc.connected.Add(1)
	// The connection may have ended between CONNACK and here.
	select {
	case <-mc.Done():
		r.lost(c, mc.Err())
	default:
	}
	return true
}

// resume sends again, on a publisher's new connection, the QoS 1/2
// messages its dropped connection left unacknowledged, when the broker
// kept the session (MQTT 3.1 has no session-present flag: a client that
// asked to keep its session assumes it was kept). It runs before the
// publisher sees the connection, so the resends go out first. A message
// the broker had in fact received may reach subscribers twice, which
// counts as a duplicate: that is QoS 1 at work. Without a kept session
// the messages are gone, and count as lost where they were not delivered.
func (r *run) resume(c *client, old, mc *mqttc.Conn) {
	pub := c.plan.Publish
	if pub == nil || pub.QoS == 0 || !(mc.SessionPresent() || mc.Version() == mqttc.Version31 && !c.opts.CleanStart) {
		return
	}
	ids, dropped := mc.Adopt(old)
	if dropped > 0 {
		r.fail(c.plan, fmt.Errorf("%s: %d messages in flight did not fit the broker's new receive maximum and are not sent again", c.plan.ID, dropped))
	}
	w := newPayloadWriter(pub)
	for _, id := range ids {
		tok := mc.Token(id)
		_, intended := r.sentAsAt(pub, c.ackCursor(), tok)
		buf, props := w.fill(r.pattern, c.plan, plans.PayloadKey{Seed: r.checks.seed, Pub: uint32(c.plan.Index), Seq: uint32(tok), Intended: intended})
		if err := mc.ResendProps(id, pub.Topic, pub.Retain, props, buf); err != nil {
			return // the new connection dropped too: its loss is recorded
		}
		r.resent.Add(1)
		if pub.QoS == 1 && !pub.Retain {
			r.resentCounted.Add(1)
		}
	}
}

// lost records an unexpected connection loss, once per connection.
func (r *run) lost(c *client, err error) {
	// Taking ready from true to false is what makes this loss count,
	// once, against a planned leave (churn.go) at the same moment.
	if c.closing.Load() || !c.ready.CompareAndSwap(true, false) {
		return
	}
	c.lost.Store(true)
	r.connected.Add(-1)
	r.down.Add(1)
	gc := &r.groupConns[c.plan.Group]
	gc.connected.Add(-1)
	gc.down.Add(1)
	ph := r.current()
	c.lostPhase.Store(uint32(ph))
	r.rec.recordEvent(c.plan.Index, ph, c.plan.Group, evDisconnect, 0)
	r.fail(c.plan, fmt.Errorf("%s lost its connection: %w", c.plan.ID, cleanErr(err)))
	if rc := r.prog.Plan.Groups[c.plan.Group].Reconnect; rc != nil && r.ctx != nil {
		r.reconnects.Add(1)
		r.reconnecting.Add(1)
		go func() {
			defer r.reconnects.Done()
			defer r.reconnecting.Add(-1)
			r.reconnect(c, rc)
		}()
	}
}

// reconnect brings a dropped client back after the group's pause, up to
// its maximum number of attempts (0: until the run ends). A client whose
// session did not survive subscribes again; a publisher waiting for the
// connection is woken and goes on with its schedule, its sends late.
func (r *run) reconnect(c *client, rc *plans.Reconnect) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for attempt := 1; rc.Max == 0 || attempt <= rc.Max; attempt++ {
		if !r.sleepUntil(r.ctx, timer, r.at()+rc.After) || c.closing.Load() {
			return
		}
		if !r.dial(r.ctx, c) {
			continue
		}
		mc := c.live.Load()
		if c.closing.Load() {
			mc.Disconnect()
			return
		}
		r.rec.recordEvent(c.plan.Index, r.current(), c.plan.Group, evReconnect, 0)
		if len(c.plan.Subscriptions) > 0 && !mc.SessionPresent() {
			r.subscribe(r.ctx, c)
		}
		select {
		case c.reconnected <- struct{}{}:
		default:
		}
		return
	}
	r.fail(c.plan, fmt.Errorf("%s gave up reconnecting after %d attempts", c.plan.ID, rc.Max))
	c.gaveUp.Store(true)
	select {
	case c.reconnected <- struct{}{}: // wake a waiting publisher to see it
	default:
	}
}

// subscribeAll sends every subscribing client's SUBSCRIBE (all its filters
// in one packet), at most 256 in flight, and waits for every SUBACK or
// timeout.
func (r *run) subscribeAll(ctx context.Context) {
	sem := make(chan struct{}, 256)
	var wg sync.WaitGroup
	for _, c := range r.clients {
		if c.live.Load() == nil || len(c.plan.Subscriptions) == 0 {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ok := r.subscribe(ctx, c)
			if c.clean != nil {
				r.cleanOpened(c, ok)
			}
		}()
	}
	wg.Wait()
}

// subscribe sends c's subscriptions (a clean churning subscriber's fence
// among them, clean_run.go) and reports whether all were granted.
func (r *run) subscribe(ctx context.Context, c *client) bool {
	pc := c.plan
	subs := make([]mqttc.Subscription, len(pc.Subscriptions), len(pc.Subscriptions)+1)
	for i, sub := range pc.Subscriptions {
		subs[i] = mqttc.Subscription{Filter: sub.Filter, QoS: sub.QoS,
			NoLocal: sub.NoLocal, RetainAsPublished: sub.RetainAsPublished, RetainHandling: sub.RetainHandling}
	}
	if c.clean != nil {
		subs = append(subs, mqttc.Subscription{Filter: c.clean.fenceTopic, QoS: 1})
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	t0 := r.at()
	reasons, err := c.live.Load().Subscribe(ctx, subs)
	ph := r.current()
	if err != nil {
		r.rec.recordEvent(pc.Index, ph, pc.Group, evSubscribeFailed, 0)
		err = r.subscribeFailure(pc, err)
		msg := err.Error()
		r.subscribeErr.CompareAndSwap(nil, &msg)
		r.fail(pc, err)
		return false
	}
	r.rec.recordSubscribe(pc.Index, ph, pc.Group, r.at()-t0)
	granted, downgraded, all := false, false, len(reasons) == len(subs)
	gg := &r.groups[pc.Group]
	for i, code := range reasons {
		f := "?"
		asked := byte(0)
		if i < len(pc.Subscriptions) {
			f, asked = pc.Subscriptions[i].Filter, pc.Subscriptions[i].QoS
		}
		if i == len(pc.Subscriptions) && c.clean != nil {
			f = c.clean.fenceTopic
		}
		if code.Failed() {
			r.rec.recordEvent(pc.Index, ph, pc.Group, evSubscribeFailed, 0)
			r.fail(pc, fmt.Errorf("subscribe %s to %q refused: %s", pc.ID, f, code))
			all = false
			continue
		}
		granted = true
		// A SUBACK's success code is the QoS granted, which may be lower
		// than the one asked for (RabbitMQ grants QoS 1 for QoS 2).
		if byte(code) < asked {
			downgraded = true
			for {
				old := gg.minGranted.Load()
				if int32(code) >= old || gg.minGranted.CompareAndSwap(old, int32(code)) {
					break
				}
			}
			for {
				old := gg.maxAsked.Load()
				if int32(asked) <= old || gg.maxAsked.CompareAndSwap(old, int32(asked)) {
					break
				}
			}
		}
	}
	if downgraded {
		gg.downgradedSubs.Add(1)
		r.rec.recordEvent(pc.Index, ph, pc.Group, evQoSDowngrade, 0)
	}
	if granted && !c.subscribed.Swap(true) {
		r.subscribed.Add(1)
	}
	return all
}

// groupGrants is what the broker granted one group's clients: QoS
// downgrades on subscriptions and on publishes.
type groupGrants struct {
	// downgradedSubs counts clients granted a lower QoS than asked on some
	// subscription; minGranted and maxAsked are the extremes seen.
	downgradedSubs       atomic.Int64
	minGranted, maxAsked atomic.Int32
	// pubDowngraded counts QoS 2 publishes acknowledged with PUBACK.
	pubDowngraded atomic.Int64
}

// incompleteBecause joins the reasons a run could not go on, with the
// first error seen, which usually says why; "" when there is none.
func (r *run) incompleteBecause(msgs []string) string {
	if len(msgs) == 0 {
		return ""
	}
	msg := strings.Join(msgs, "; ")
	r.errMu.Lock()
	if len(r.errKinds) > 0 {
		msg += " (first error: " + r.errKinds[0].first + ")"
	}
	r.errMu.Unlock()
	return msg
}

// unsubscribedGroups names the subscribing groups of which no client has a
// subscription granted: nothing can be measured for them, and the run is
// incomplete, as when none of a group's clients connects (on any shard).
func (r *run) unsubscribedGroups(ctx context.Context) string {
	ok := make([]int64, len(r.prog.Groups))
	for gi, gp := range r.prog.Groups {
		for _, c := range r.clients[gp.First : gp.First+gp.Count] {
			if c.subscribed.Load() {
				ok[gi]++
			}
		}
	}
	if ok = r.sumOverShards(ctx, "subscribe", ok); ok == nil {
		return r.syncFailed()
	}
	var msgs []string
	for gi, gp := range r.prog.Groups {
		if !gp.Subscribes || gp.Count == 0 {
			continue
		}
		if ok[gi] == 0 {
			msgs = append(msgs, fmt.Sprintf("group %s: none of its %d clients could subscribe", gp.Name, gp.Count))
		}
	}
	if why := r.subscribeErr.Load(); why != nil && len(msgs) > 0 {
		return strings.Join(msgs, "; ") + " (first error: " + *why + ")"
	}
	return r.incompleteBecause(msgs)
}

// noteSilentShare says so when share group k received nothing although a
// publisher that sent messages has a topic its filter matches: brokers
// without shared subscriptions (NATS, RabbitMQ, aedes) take $share/... for
// a plain topic that nobody publishes to, and the run would otherwise show
// only a 100% loss.
func (r *run) noteSilentShare(k int) {
	var filter, full string
	for i, c := range r.clients {
		if !r.owns(i) {
			// Sharded, a share group is whole on one shard: the one
			// that owns it says whether it heard anything.
			continue
		}
		for _, s := range c.plan.Subscriptions {
			if s.ShareKey == k {
				full = s.Filter
				_, filter, _ = plans.SplitShare(s.Filter)
			}
		}
		if full != "" {
			break
		}
	}
	if full == "" {
		return
	}
	for i, c := range r.clients {
		if pub := c.plan.Publish; pub != nil && (c.next > 0 || r.sentHere(i)) && plans.MatchFilter(filter, pub.Topic) {
			r.note(plans.SilentShare(full))
			return
		}
	}
}

// note keeps a notice for the report, once.
func (r *run) note(msg string) {
	r.notesMu.Lock()
	defer r.notesMu.Unlock()
	if !slices.Contains(r.notes, msg) {
		r.notes = append(r.notes, msg)
	}
}

// notices are what the broker did differently from what the plan asked,
// for the report's warnings: QoS downgrades, missing shared subscriptions,
// copies for overlapping subscriptions.
func (r *run) notices() []string {
	out := []string{}
	for gi := range r.groups {
		gg := &r.groups[gi]
		name, of := r.prog.Groups[gi].Name, r.ofClients(gi)
		if n := gg.downgradedSubs.Load(); n > 0 {
			out = append(out, fmt.Sprintf("group %s: asked QoS %d, the broker granted QoS %d (%d of %s): deliveries come at the granted QoS",
				name, gg.maxAsked.Load(), gg.minGranted.Load(), n, of))
		}
		if n := gg.pubDowngraded.Load(); n > 0 {
			out = append(out, fmt.Sprintf("group %s: %d QoS 2 publishes%s were acknowledged with PUBACK, as QoS 1: the broker downgraded them, so exactly-once was not tested", name, n, r.shardWord()))
		}
	}
	r.notesMu.Lock()
	out = append(out, r.notes...)
	r.notesMu.Unlock()
	return out
}

// sendGrace is how long after the end of the steady phase (or an
// interruption) a publisher that fell behind may still send the messages
// that were due before it: long enough for ordinary jitter and an ack or
// two, short enough that drain is for collecting, not for sending. What is
// not sent by then counts as unsent.
const sendGrace = 250 * time.Millisecond

// publishPhases runs warmup, ramp and steady with every publisher on its
// schedule, stops publishing, counts what was due and never sent, then
// drains.
func (r *run) publishPhases(ctx context.Context) {
	prog := r.prog
	pubCtx, stop := context.WithCancel(ctx)
	defer stop()
	start, ok := r.publishStart(ctx)
	if !ok {
		return
	}
	r.pubStart.Store(start)
	r.sh.markStarted()
	r.setPhase(phase.Warmup)
	var pubs []*client
	for _, c := range r.clients {
		if c.plan.Publish == nil || !r.owns(c.plan.Index) {
			continue
		}
		if c.live.Load() == nil {
			// Never connected: it will send none of its messages.
			c.quit.Store(1)
			continue
		}
		if c.wake == nil { // a closed-loop publisher has had one since it connected
			c.wake = make(chan struct{}, 1)
		}
		if !c.plan.Publish.Max {
			c.ps = r.newPubState(c)
		}
		pubs = append(pubs, c)
	}
	pace, err := newPacer(pubs, start, r.now, r.paceDue)
	if err != nil {
		r.fail(nil, fmt.Errorf("pacer: %w", err))
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pace.run(pubCtx)
	}()
	for _, c := range pubs {
		c.publishing.Store(true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.publishing.Store(false)
			if c.plan.Publish.Max {
				r.publishMax(pubCtx, c, start)
				return
			}
			r.publish(pubCtx, c, start)
		}()
	}
	// The clients of churning groups that do not publish follow their
	// timetable on their own goroutines (publishers do it in publish).
	for _, c := range r.clients {
		if s, _ := prog.ChurnOf(c.plan); s != nil && c.plan.Publish == nil && c.live.Load() != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.runChurn(pubCtx, c, start)
			}()
		}
	}
	// Advance the phase clock at the planned boundaries.
	end := prog.Warmup + prog.Ramp + prog.Steady
	bounds := []struct {
		at    time.Duration
		phase phase.Phase
	}{
		{prog.Warmup, phase.Ramp},
		{prog.Warmup + prog.Ramp, phase.Steady},
		{end, phase.Drain},
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	phaseCtx, endPhases := closedLoopEnd(ctx, pubs, &wg)
	defer endPhases()
	for _, b := range bounds {
		if !r.sleepUntil(phaseCtx, timer, time.Duration(start)+b.at) {
			break
		}
		r.setPhase(b.phase)
	}
	// Publishing stops at the end of steady (or now, when interrupted):
	// the messages due before then are what the schedule called for. A
	// publisher behind schedule has sendGrace to catch up, then stop
	// releases it, even one waiting for an in-flight slot; one stuck
	// writing to a stalled broker is released by a write deadline.
	cutoff := min(time.Duration(r.now()-start), end)
	r.unsentMu.Lock()
	r.unsentCutoff, r.cutoffKnown = cutoff, true
	r.unsentMu.Unlock()
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	if ctx.Err() == nil {
		timer.Reset(min(sendGrace, prog.Drain))
		select {
		case <-finished:
		case <-timer.C:
		case <-ctx.Done():
		}
	}
	stop()
	r.releaseWriters(pubs, finished)
	r.cleanPublishingOver()
	r.setPhase(phase.Drain)
	r.countUnsent(cutoff)
	r.startExpect(ctx)
	drain := prog.Drain - (r.at() - r.phaseStart[phase.Drain])
	if ctx.Err() != nil {
		drain = min(r.interruptDrain(), prog.Drain)
	}
	if drain > 0 {
		r.probeQoS0(pubs)
	}
	r.drainQuiet = r.drain(ctx, drain)
	// A publish never acknowledged is one the broker did not take, as far
	// as anyone can tell: an error, so that the built-in errors check
	// fails. Without it a plan with no deliveries to lose (publishers
	// only) passes against a broker that stopped acknowledging.
	for _, c := range r.clients {
		if mc := c.live.Load(); mc != nil && c.ready.Load() {
			if n := mc.Pending(); n > 0 {
				r.inflightAtEnd += int64(n)
				r.fail(c.plan, fmt.Errorf("%s: publishes still awaiting their acknowledgement when drain ended", c.plan.ID))
			}
			if !mc.ProbeAnswered() {
				r.fail(c.plan, fmt.Errorf("%s: the broker did not answer PINGREQ by the end of drain: it stopped reading, so its QoS 0 publishes may never have reached it", c.plan.ID))
			}
		}
	}
}

// releaseWriters waits until every publisher has returned. A publisher
// still running after stop, found inside a write every time it is checked
// (every 100 ms), is blocked writing to a broker that reads nothing
// (paused, or its socket buffers full): a write deadline on its
// connection ends that write, which then counts as not sent. Only such
// connections get the deadline, and it is lifted once every publisher has
// returned, so a healthy connection is never cut.
func (r *run) releaseWriters(pubs []*client, finished <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var cut []*mqttc.Conn
	for {
		select {
		case <-finished:
			for _, mc := range cut {
				_ = mc.SetWriteDeadline(time.Time{})
			}
			return
		case <-tick.C:
		}
		for _, c := range pubs {
			// A publisher the pacer holds may be in the pacer's write
			// (pacer_send.go) after its goroutine has returned.
			if mc := c.live.Load(); mc != nil && (c.publishing.Load() || c.pacerHeld()) && mc.Writing() {
				_ = mc.SetWriteDeadline(time.Now())
				cut = append(cut, mc)
			}
		}
	}
}

// countUnsent counts, once every publisher has returned, the messages its
// schedule called for before cutoff (an offset from the start of warmup)
// that it never got to, per publishing phase, less those the snapshots
// already counted (countSkipped). A publisher that never connected never
// got to any.
func (r *run) countUnsent(cutoff time.Duration) {
	r.unsentMu.Lock()
	defer r.unsentMu.Unlock()
	r.unsentDone = true
	for _, c := range r.clients {
		pub := c.plan.Publish
		if pub == nil || !r.owns(c.plan.Index) {
			continue
		}
		if from, ok := pub.Schedule.At(c.next); ok {
			r.recordUnsentSpan(c, max(from, c.unsentTo), cutoff)
		}
	}
}

// countSkipped counts, at each snapshot while publishing goes on, the
// messages that publishers which will never send again (see client.quit)
// skipped, up to the intended time past (ns since the epoch) whose
// messages have had their allowance (see recorder.matured): their
// deliveries are lost so far like those of a message sent and never
// delivered, and not first when publishing is over. It costs a few
// operations per publisher, never per message (Schedule.Messages is a
// closed form), and what it counts countUnsent does not count again.
func (r *run) countSkipped(past int64) {
	start := r.pubStart.Load()
	if start == 0 || past <= start {
		return // publishing has not started, or nothing is past yet
	}
	hi := min(time.Duration(past-start), r.prog.Warmup+r.prog.Ramp+r.prog.Steady)
	r.unsentMu.Lock()
	defer r.unsentMu.Unlock()
	if r.unsentDone {
		return
	}
	if r.cutoffKnown {
		hi = min(hi, r.unsentCutoff)
	}
	for _, c := range r.clients {
		q := c.quit.Load()
		if q == 0 || c.plan.Publish == nil {
			continue
		}
		from, ok := c.plan.Publish.Schedule.At(int(q - 1))
		if !ok {
			continue
		}
		r.recordUnsentSpan(c, max(from, c.unsentTo), hi)
	}
}

// recordUnsentSpan counts as unsent the messages of c's schedule intended
// in [lo, hi) (offsets from the start of warmup), per publishing phase,
// and marks them counted. r.unsentMu must be held.
func (r *run) recordUnsentSpan(c *client, lo, hi time.Duration) {
	if lo >= hi {
		return
	}
	prog := r.prog
	bounds := [...]time.Duration{0, prog.Warmup, prog.Warmup + prog.Ramp, prog.Warmup + prog.Ramp + prog.Steady}
	for i := 0; i < 3; i++ {
		a, b := max(lo, bounds[i]), min(hi, bounds[i+1])
		n := int64(prog.Sends(c.plan, a, b)) // a churning publisher's away windows are not due
		r.rec.recordUnsent(c.plan.Index, phase.Warmup+phase.Phase(i), c.plan.Group, n, c.expected, c.expectedBy)
	}
	r.recordStageUnsentSpan(c, lo, hi)
	c.unsentTo = hi
}

// minQuiet is the shortest time drain keeps listening after the last
// expected delivery.
const minQuiet = 20 * time.Millisecond

// drain waits until every expected delivery and every acknowledgement has
// arrived, then keeps listening for a quiet period (twice the run's p99
// latency, at least minQuiet), so that a duplicate or a stray delivery
// right behind the last expected one is counted too, all within limit.
// With drain's mapping form (plans.Program.DrainQuiet) it also ends once
// no new delivery or acknowledgement has arrived for that long, counted
// from the start of drain or the last of them, also while it listens past
// the last expected delivery. It returns the quiet period it used (0 when
// the expected deliveries never all arrived), and leaves when drain ended
// and the delivery rate in its last second for settleLate and the report.
//
// An interruption during drain (Ctrl-C) cuts what is left of it to the
// interrupt drain: the user asked for the report soon.
func (r *run) drain(ctx context.Context, limit time.Duration) time.Duration {
	start := r.at()
	deadline := start + limit
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var quiet, metAt time.Duration
	var rate endRate
	idleFor, lastSeen, lastNew := r.prog.DrainQuiet, int64(-1), start
	defer func() {
		end := r.at()
		_, got, _ := r.rec.totals()
		r.drainEndAt, r.drainLen = end, end-r.phaseStart[phase.Drain]
		r.drainEndRate = rate.rate(end, got)
	}()
	interrupted := ctx.Err() != nil
	for r.at() < deadline {
		// With no connection left, and none coming back, nothing more
		// can arrive: drain is over.
		if r.connected.Load() == 0 && r.reconnecting.Load() == 0 {
			return 0
		}
		if !interrupted && ctx.Err() != nil {
			interrupted = true
			deadline = min(deadline, r.at()+r.interruptDrain())
		}
		exp, got, acked := r.rec.totals()
		now := r.at()
		rate.sample(now, got)
		if got+acked != lastSeen {
			lastSeen, lastNew = got+acked, now
		}
		exp = r.expectedHere(exp)
		switch {
		case idleFor > 0 && now-lastNew >= idleFor:
			// The mapping form's quiet: no new delivery (or ack) for that
			// long, whether or not every expected one is in (then what it
			// listened past the last of them is the quiet it used).
			if quiet > 0 {
				return now - metAt
			}
			return 0
		case got < exp || !r.allAcked() || !r.answersIn():
			quiet = 0
		case quiet == 0:
			metAt = now
			quiet = max(minQuiet, 2*r.rec.latencyQuantile(99))
		case now-metAt >= quiet:
			return quiet
		}
		<-tick.C
	}
	return quiet
}

// interruptDrain is how long drain may go on after an interruption.
func (r *run) interruptDrain() time.Duration {
	if d := r.opts.InterruptDrain; d > 0 {
		return d
	}
	return 2 * time.Second
}

// allAcked reports whether no QoS 1/2 PUBLISH is still awaiting its ack
// on a live connection, and no probe its PINGRESP.
func (r *run) allAcked() bool {
	for _, c := range r.clients {
		if mc := c.live.Load(); mc != nil && c.ready.Load() && (mc.Pending() > 0 || !mc.ProbeAnswered()) {
			return false
		}
	}
	return true
}

// probeQoS0 probes (see mqttc.Conn.Probe) the connection of every QoS 0
// publisher still connected when publishing stops: the answer, awaited
// by drain like an acknowledgement, shows the broker read what it was
// sent. QoS 1 and 2 publishers need no probe: their acknowledgements
// show it.
func (r *run) probeQoS0(pubs []*client) {
	for _, c := range pubs {
		if c.plan.Publish.QoS != 0 {
			continue
		}
		if mc := c.live.Load(); mc != nil && c.ready.Load() {
			go mc.Probe()
		}
	}
}

// publish runs one client's open-loop schedule, woken by the pacer. The
// payload buffer, the Publish value and the send record are reused for
// every message: nothing in mqplan's own code allocates per message.
// c.next always says which message the publisher is at, so that what it
// never got to can be counted as unsent when it returns.
func (r *run) publish(ctx context.Context, c *client, start int64) {
	pc := c.plan
	pub := pc.Publish
	// Returning while publishing goes on (the connection lost and not
	// coming back) skips the rest of the schedule: say so, so that the
	// snapshots count it as it falls due.
	defer func() {
		if ctx.Err() == nil {
			c.quit.Store(int64(c.next) + 1)
		}
	}()
	ps := c.ps
	cp := c.cleanPub // nil unless a clean churning subscriber reads it
	// A churning publisher leaves and comes back between two messages
	// (churn.go), and skips the messages due while it is away: they are
	// not in its timetable (plans.Sessions).
	churn, slot := r.prog.ChurnOf(pc)
	leaves, nextLeave := churn.Disconnects(slot), 0
	var churnTimer *time.Timer
	if leaves > 0 {
		churnTimer = time.NewTimer(time.Hour)
		defer churnTimer.Stop()
	}
	for k := 0; ; k++ {
		c.next = k
		// The schedule read in order: O(1) a message for Poisson arrivals
		// too (cursors.go); the skip over a churn's away window
		// repositions it.
		off, ok := ps.cur.At(k)
		for nextLeave < leaves && (!ok || off >= churn.DisconnectAt(slot, nextLeave)) {
			if !r.churnCycle(ctx, c, churnTimer, start, churn, slot, nextLeave) {
				return
			}
			nextLeave++
		}
		if !ok {
			return
		}
		if back, away := churn.Back(slot, off); away {
			from := k
			k = pub.Schedule.Messages(0, back) - 1 // the first message due once back
			if cp != nil {
				cp.skip(uint32(from), uint32(k+1))
			}
			continue
		}
		intended := start + int64(off)
		// A message not due yet, on a connection that is up, is the
		// pacer's to write (pacer_send.go): it gives the publisher back
		// at the first message it cannot write itself.
		if ps.pacer && c.ready.Load() && r.now() < intended {
			if !r.awaitGiveBack(ctx, c, intended) {
				return
			}
			if ps.flush {
				// The pacer's write stalled (pacer_send.go): its tail goes
				// out first, this goroutine waiting for the socket alone.
				ps.flush = false
				if err := c.live.Load().Flush(); err != nil && ctx.Err() == nil {
					r.fail(c.plan, fmt.Errorf("publish %s: %w", c.plan.ID, cleanErr(err)))
				}
			}
			if c.next != k {
				k = c.next - 1
				continue
			}
		}
		// The pacer signals c.wake when a message falls due; a signal
		// left over from a message sent late only causes a re-check.
		for r.now() < intended {
			select {
			case <-c.wake:
			case <-ctx.Done():
				return
			case <-c.live.Load().Done():
				if !r.awaitReconnect(ctx, c) {
					return
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		if !c.ready.Load() && !r.awaitReconnect(ctx, c) {
			return
		}
		switch r.send(ctx, c, ps, k, off, false) {
		case sendStopped:
			return
		case sendFailed:
			if !c.ready.Load() && !r.awaitReconnect(ctx, c) {
				return
			}
		}
	}
}

// sentAs maps the token of a publisher's QoS 1/2 message back to the
// message: the token is its sequence number (1 for the schedule's first
// message), and the schedule, a pure function of it, gives its phase and
// its intended time (wall-clock ns, as its header carries it). The
// schedule is the runner's table of tokens: nothing is stored per
// message, and the connection carries a fixed-size record whatever the
// runner needs to know.
func (r *run) sentAs(pub *plans.ClientPublish, tok mqttc.Token) (ph phase.Phase, intended int64) {
	return r.sentAsAt(pub, nil, tok)
}

// sentAsAt is sentAs reading the schedule through cur (cursors.go), which
// is O(1) a message for Poisson arrivals when the tokens come in order, as
// acknowledgements do; nil reads it by random access.
func (r *run) sentAsAt(pub *plans.ClientPublish, cur *sharedCursor, tok mqttc.Token) (ph phase.Phase, intended int64) {
	if pub.Max {
		return r.sentAsMax(tok)
	}
	off, _ := cur.at(&pub.Schedule, int(tok)-1)
	return r.prog.PhaseOf(off), r.epochWall + r.pubStart.Load() + int64(off)
}

// awaitReconnect waits, for a publisher whose connection dropped, until the
// client is connected again; false when it will not be (no reconnect
// policy, attempts exhausted, or the run is ending).
func (r *run) awaitReconnect(ctx context.Context, c *client) bool {
	if r.prog.Plan.Groups[c.plan.Group].Reconnect == nil {
		return false
	}
	for !c.ready.Load() {
		select {
		case <-c.reconnected:
		case <-ctx.Done():
			return false
		}
		if c.gaveUp.Load() {
			return false
		}
	}
	return true
}

// receive measures one delivery. It runs on the receiving connection's
// reader goroutine, one message at a time, and does not allocate.
//
// A delivery with the retain flag set is a stored retained message that
// the broker replays at subscribe time (live deliveries carry retain 0
// unless the subscription asked for retain_as_published): it is not one
// of the run's deliveries, even when an earlier run (or this one, before
// a resubscribe) published it, and counts as foreign. So does a message
// stamped before this run began: an earlier run's retained or queued
// message, which would otherwise pass for this run's and turn the live
// one into a duplicate.
func (r *run) receive(c *client, payload []byte, retained bool) {
	r.receiveProps(c, nil, payload, retained)
}

// receiveProps is receive with the delivery's MQTT 5 properties, where a
// header: property message carries its header.
func (r *run) receiveProps(c *client, props, payload []byte, retained bool) {
	now := r.now()
	pc := c.plan
	if c.clean != nil && c.clean.isFence(payload) {
		r.cleanFenceBack(c)
		return
	}
	h, place := r.checks.findHeader(props, payload)
	ok := place != placeNone && place != placeBroken
	clients := r.prog.Clients
	d := &c.recv
	if retained && !c.retainAsPublished {
		r.rec.recordForeign(pc.Index, r.current(), pc.Group)
		return
	}
	if !ok || h.seq == 0 || int(h.pub) >= len(clients) || clients[h.pub].Publish == nil || r.listenOnly || h.intended < r.epochWall {
		if ok && h.seq != 0 && r.listenOnly && (place == placeProperty || paddingOK(payload, r.pattern, h, len(payload))) {
			// Another process's message (mqplan pub): there is nothing to
			// expect, so only deliveries, duplicates, order and latency
			// (from its wall-clock intended time) are measured. A payload
			// whose header is in a user property is another process's
			// text (mqplan pub -m), which this one does not know: its
			// content is not checked.
			d.phase, d.group, d.pubGroup = r.current(), pc.Group, pc.Group
			d.inStage, d.from = 0, -1
			d.kind = r.observe(c, h, d.phase, 0, now)
			d.scheduled = false
			d.bytes = int64(len(payload))
			d.latency = max(0, time.Duration(r.epochWall+now-h.intended))
			d.at = time.Duration(now)
			r.rec.recordReceive(pc.Index, d)
			return
		}
		if claimsRun(place) && !r.listenOnly && (!ok || h.intended >= r.epochWall) {
			r.rec.recordCorrupt(pc.Index, r.current(), pc.Group)
			return
		}
		r.rec.recordForeign(pc.Index, r.current(), pc.Group)
		return
	}
	from := &clients[h.pub]
	r.awaitPubStart()
	sent := h.intended - r.epochWall // monotonic ns since the epoch
	off := time.Duration(sent - r.pubStart.Load())
	ph := r.prog.PhaseOf(off)
	if !r.checks.contentOK(r.pattern, payload, h, place, from) {
		r.rec.recordCorrupt(pc.Index, ph, pc.Group)
		return
	}
	d.phase, d.group, d.pubGroup = ph, pc.Group, from.Group
	d.inStage = r.prog.StageOf(off) + 1
	d.from = r.shardOf(h.pub)
	d.bytes = int64(len(payload))
	d.latency = time.Duration(now - sent)
	d.at = time.Duration(now)
	d.scheduled = true
	d.kind = r.observe(c, h, ph, d.inStage, now)
	if d.kind == deliveryUnexpected {
		r.rec.recordUnexpected(pc.Index, ph, pc.Group)
		return
	}
	if st := c.lastStream; c.clean != nil && st != nil && st.peer > 0 && (d.kind == deliveryFirst || d.kind == deliveryOutOfOrder) {
		r.cleanDeliver(c, st.peer-1, h.seq, d)
		return
	}
	r.rec.recordReceive(pc.Index, d)
}

// observe classifies a delivery on its stream: the client's own, or its
// share group's (where only duplicates count: MQTT orders messages per
// connection, and members of a share group legitimately interleave). A
// delivery the client's subscriptions do not imply is unexpected and
// touches no stream: taken as received, it would stand in for a lost
// delivery of another client of the same group. now (ns since the epoch)
// is when the delivery arrived.
func (r *run) observe(c *client, h header, ph phase.Phase, inStage int, now int64) delivery {
	if sh := c.share; sh != nil {
		expected, ok := c.expects[h.pub]
		if !ok {
			own, shared := r.matches(c, h.pub)
			expected = r.listenOnly || own+shared > 0
			c.expects[h.pub] = expected
		}
		if !expected {
			return deliveryUnexpected
		}
		sh.mu.Lock()
		st := streamFor(sh.streams, h.pub)
		st.lastAt = now
		kind := st.observe(h.seq)
		sh.mu.Unlock()
		if kind == deliveryOutOfOrder {
			kind = deliveryFirst
		}
		return kind
	}
	if c.lastStream == nil || c.lastPub != h.pub {
		st := c.streams[h.pub]
		if st == nil {
			own, shared := r.matches(c, h.pub)
			st = &stream{extra: uint8(min(max(own-1, 0), 255)), unexpected: !r.listenOnly && own+shared == 0}
			if c.clean != nil {
				if i, ok := c.clean.slot[h.pub]; ok {
					st.peer = i + 1
				}
			}
			c.streams[h.pub] = st
		}
		c.lastPub, c.lastStream = h.pub, st
	}
	if c.lastStream.unexpected {
		return deliveryUnexpected
	}
	c.lastStream.lastAt = now
	return c.lastStream.classify(c.lastStream.observe(h.seq), ph, inStage)
}

// matches counts c's filters that match the topic of publisher pub and
// would bring c its messages (a no_local filter does not bring a client
// its own): own are ordinary subscriptions, each of which a broker that
// sends one copy per subscription adds a copy for; shared are $share
// ones. It runs once per publisher a client hears from, never per
// delivery; 0, 0 for a publisher that is not in the plan.
func (r *run) matches(c *client, pub uint32) (own, shared int) {
	if r.listenOnly || int(pub) >= len(r.prog.Clients) || r.prog.Clients[pub].Publish == nil {
		return 0, 0
	}
	topic := r.prog.Clients[pub].Publish.Topic
	for _, s := range c.plan.Subscriptions {
		if s.NoLocal && int(pub) == c.plan.Index {
			continue
		}
		if s.Share == "" {
			if plans.MatchFilter(s.Filter, topic) {
				own++
			}
		} else if _, f, err := plans.SplitShare(s.Filter); err == nil && plans.MatchFilter(f, topic) {
			shared++
		}
	}
	return own, shared
}

// disconnectAll sends DISCONNECT on every live connection and closes them,
// bounded in time so that a stuck broker cannot hang the end of a run,
// waits for their readers (deliveries that arrive until then still count),
// and then settles the accounts that need every reader stopped.
func (r *run) disconnectAll() {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	for _, c := range r.clients {
		c.closing.Store(true)
	}
	// No reconnect starts or completes past this point (each checks closing).
	r.reconnects.Wait()
	for _, c := range r.clients {
		mc := c.live.Load()
		if mc == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			mc.Disconnect()
			<-mc.ReaderDone()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	readersDone := true
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		readersDone = false
	}
	r.settle(readersDone)
}

// settle counts, when the run is over, the clients lost for good, and the
// deliveries lost because their publish was never acknowledged: the QoS
// 1/2 messages still in flight when drain ended or left behind by a
// dropped connection, less those that arrived all the same. Reading the
// subscribers' streams needs every reader stopped; when one could not be
// stopped in time those deliveries stay counted as the broker's loss.
func (r *run) settle(readersDone bool) {
	r.cleanWhy = r.cleanSettle()
	for _, c := range r.clients {
		if c.live.Load() != nil && c.lost.Load() {
			r.rec.recordEvent(c.plan.Index, phase.Phase(c.lostPhase.Load()), c.plan.Group, evClientLost, 0)
		}
	}
	// Sharded, every shard learns every publisher's unacknowledged
	// messages (shard_unacked.go), whatever its readers did: the others
	// wait for it at the same barriers.
	var all [][]mqttc.Token
	if r.sh.shard != nil {
		mine := make([][]mqttc.Token, len(r.clients))
		for _, c := range r.clients {
			if pub := c.plan.Publish; pub != nil && pub.QoS > 0 && r.owns(c.plan.Index) {
				mine[c.plan.Index] = c.abandoned
				if mc := c.live.Load(); mc != nil {
					mine[c.plan.Index] = mc.TakeUnacked(c.abandoned)
				}
			}
		}
		var err error
		if all, err = r.exchangeUnacked(mine); err != nil {
			r.note(fmt.Sprintf("shard %d/%d: the shards could not tell each other which messages were never acknowledged (%v): lost_unacked counts only this shard's receivers of this shard's publishers, the rest of their loss is in lost_broker", r.sh.shard.Index, r.sh.shard.Count, err))
			all = mine
		}
	}
	if !readersDone {
		return
	}
	byPub := map[uint32][]holder{}
	shareGroup := make([]int, len(r.shares))
	for i := range shareGroup {
		shareGroup[i] = -1
	}
	for _, c := range r.clients {
		if c.share != nil {
			for k, sh := range r.shares {
				if sh == c.share && shareGroup[k] < 0 {
					shareGroup[k] = c.plan.Group
				}
			}
			continue
		}
		for pub, st := range c.streams {
			if st.misjudged() {
				// A drawn or templated size is counted at its mean:
				// the stream keeps no size per copy.
				size := int64(r.prog.Clients[pub].Publish.MeanSize + 0.5)
				for i, n := range st.copiesBy {
					if n > 0 {
						r.rec.recordMisjudgedCopies(phase.Warmup+phase.Phase(i), c.plan.Group, int64(n), size)
					}
				}
				for i, n := range st.copiesByStage {
					r.rec.recordStageMisjudgedCopies(i, int64(n), size)
				}
			}
			if !st.unexpected {
				byPub[pub] = append(byPub[pub], holder{st, c.plan.Group})
			}
		}
	}
	for k, sh := range r.shares {
		if shareGroup[k] < 0 {
			continue
		}
		for pub, st := range sh.streams {
			byPub[pub] = append(byPub[pub], holder{st, shareGroup[k]})
		}
		if len(sh.streams) == 0 {
			r.noteSilentShare(k)
		}
	}
	// The late tail of each stream is counted once the unacknowledged
	// messages are known, on every way out.
	unackedOf := map[int][]mqttc.Token{}
	defer func() { r.settleLate(byPub, unackedOf) }()
	seen := make([]int64, len(r.prog.Groups))
	var here [][]int // sharded: each publisher's deliveries to this shard's receivers, by group
	for _, c := range r.clients {
		pub := c.plan.Publish
		if pub == nil || pub.QoS == 0 {
			continue
		}
		var unacked []mqttc.Token
		want, cur := c.expectedBy, c.ackCursor()
		if r.sh.shard == nil {
			unacked = c.abandoned
			if mc := c.live.Load(); mc != nil {
				unacked = mc.TakeUnacked(unacked)
			}
		} else {
			// Any shard's publisher: what this shard's receivers missed.
			if unacked = all[c.plan.Index]; len(unacked) == 0 {
				continue
			}
			if here == nil {
				var err error
				if here, err = plans.ExpectedOwned(r.prog, r.sh.shard.Owned); err != nil {
					r.note(fmt.Sprintf("lost_unacked: %v", err))
					return
				}
			}
			want = here[c.plan.Index][:len(r.prog.Groups)]
		}
		if len(unacked) > 0 {
			unackedOf[c.plan.Index] = unacked
		}
		holders := byPub[uint32(c.plan.Index)]
		for _, tok := range unacked {
			ph, intended := r.sentAsAt(pub, cur, tok)
			stage := r.prog.StageOf(time.Duration(intended - r.epochWall - r.pubStart.Load()))
			clear(seen)
			for _, h := range holders {
				if h.st.has(uint32(tok)) {
					seen[h.group]++
				}
			}
			for g, w := range want {
				if n := int64(w) - seen[g]; n > 0 {
					r.rec.recordLostUnacked(ph, c.plan.Group, g, n)
					r.rec.recordStageLostUnacked(stage, n)
				}
			}
			r.cleanLostUnacked(c, tok, ph, stage)
		}
	}
}

// pinger keeps idle connections alive: every tick it lets every
// connection send PINGREQ when it has been quiet for half its keepalive
// (one goroutine for all clients instead of a timer each).
func (r *run) pinger(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	// Tick often enough that a ping leaves within half a keepalive of the
	// last write even for the shortest keepalive of the plan.
	every := time.Second
	for _, g := range r.prog.Plan.Groups {
		if g.Keepalive > 0 {
			every = min(every, max(g.Keepalive/4, 50*time.Millisecond))
		}
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		now := r.now()
		for _, c := range r.clients {
			if mc := c.live.Load(); mc != nil && c.ready.Load() {
				mc.Ping(now)
			}
		}
	}
}

// groupInfo summarises each group's connections.
func (r *run) groupInfo() []stats.GroupInfo {
	out := make([]stats.GroupInfo, len(r.prog.Groups))
	for gi, gp := range r.prog.Groups {
		out[gi] = stats.GroupInfo{Name: gp.Name, Clients: gp.Count}
		for _, c := range r.clients[gp.First : gp.First+gp.Count] {
			if !r.owns(c.plan.Index) {
				out[gi].Clients-- // a shard's groups count its own clients
				continue
			}
			if c.live.Load() != nil {
				out[gi].Connected++
				if c.lost.Load() {
					out[gi].Lost++
				} else {
					out[gi].ConnectedAtEnd++
				}
			}
		}
	}
	return out
}

// snapshots takes the per-second timeline until stop is closed.
func (r *run) snapshots(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	scratch := newSecondScratch(len(r.prog.Groups))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var errors int64
	last := r.at()
	for {
		select {
		case <-stop:
			r.snapshot(scratch, &errors, &last, true)
			return
		case <-tick.C:
			r.snapshot(scratch, &errors, &last, false)
		}
	}
}

// snapshot takes one second of the timeline (see recorder.second) and
// reports progress; final is the one taken when the run is over.
func (r *run) snapshot(scratch *secondScratch, errs *int64, last *time.Duration, final bool) {
	hooks := secondHooks{latency: r.opts.Latency, ack: r.opts.Ack, lost: r.opts.LostSoFar}
	matured := r.rec.matured(r.now(), final)
	if !final {
		// The messages intended before the first bucket still within its
		// allowance have had their time, sent or not.
		r.countSkipped(matured * r.rec.dueWidth)
	}
	s := r.rec.second(scratch, hooks, matured)
	now := r.at()
	s.At = now
	s.Phase = r.current()
	r.sampleProcs(&s)
	r.sampleCounters(&s)
	// The whole run's connections are the sum of the groups' as read
	// here, so that the timeline's groups add up to its totals.
	for g := range s.Groups {
		gs, gc := &s.Groups[g], &r.groupConns[g]
		gs.Group = r.prog.Groups[g].Name
		gs.Connected, gs.Lost = int(gc.connected.Load()), int(gc.down.Load())
		s.Connected += gs.Connected
		s.Lost += gs.Lost
	}
	*errs += s.Errors
	r.sentTotal += s.Sent
	r.recvTotal += s.Received
	r.timelineMu.Lock()
	r.timeline = append(r.timeline, s)
	r.timelineMu.Unlock()
	if r.opts.Second != nil {
		r.opts.Second(s)
	}
	if r.opts.Progress != nil {
		secs := (now - *last).Seconds()
		if secs <= 0 {
			secs = 1
		}
		r.opts.Progress(Progress{
			Phase:      s.Phase,
			Elapsed:    now,
			Connected:  s.Connected,
			Lost:       s.Lost,
			Subscribed: int(r.subscribed.Load()),
			Clients:    len(r.clients),
			SendRate:   float64(s.Sent) / secs,
			RecvRate:   float64(s.Received) / secs,
			P99:        s.P99,
			Errors:     *errs,
			Sent:       r.sentTotal,
			Received:   r.recvTotal,
		})
	}
	*last = now
}

// cleanErr turns library errors into one readable line.
func cleanErr(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("timed out")
	case errors.Is(err, context.Canceled):
		return errors.New("cancelled")
	}
	// One wording for every timeout, whichever layer noticed it.
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("timed out")
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}
