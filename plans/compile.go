package plans

import (
	"fmt"
	"github.com/mqplan/mqplan/phase"
	"math"
	"slices"
	"strconv"
	"time"
)

// CompileOptions are the inputs of Compile that do not come from the plan.
type CompileOptions struct {
	// RunID makes default client ids unique per run, so that two runs (or
	// a leftover session on a real broker) never collide. Empty means "run".
	RunID string
}

// Program is a compiled plan: every client with its expanded identity,
// subscriptions, topic, schedule and expected deliveries, and the phases
// of the timeline. It is a pure value: explain prints it, the runner
// executes it, and tests check it exactly.
type Program struct {
	Plan *Plan
	// Thresholds are the compiled pass conditions: the plan's, in plan
	// order, then the built-in integrity checks it leaves to mqplan.
	Thresholds []*Threshold
	// Groups parallels Plan.Groups.
	Groups []GroupProgram
	// Clients holds every client in connect order: the clients of
	// subscribing groups first, so that subscriptions are in place before
	// anything is published. A client's index here is its publisher number
	// in message headers.
	Clients []Client
	// Phases holds every phase, indexed by phase.Phase, with its planned
	// length and load.
	Phases []PhasePlan
	// Warmup, Ramp and Steady are the publishing phases' lengths (Steady is
	// derived from publish counts when the plan has no duration).
	Warmup, Ramp, Steady, Drain time.Duration
	// DrainQuiet, from drain's mapping form, ends drain once no new
	// delivery arrived for this long; Drain is then its max. 0 with the
	// plain form: drain waits up to Drain for the expected deliveries.
	DrainQuiet time.Duration
	// MaxPayload is the largest payload any publisher sends.
	MaxPayload int
	// Stages parallels Plan.Stages: each stage's window and exact load
	// (nil without stages).
	Stages []StagePlan
}

// GroupProgram is one group after compilation.
type GroupProgram struct {
	// Index is the group's position in Plan.Groups.
	Index int
	Name  string
	// Stage is when the group connects: groups that subscribe connect
	// first, so that every subscription is in before anyone publishes.
	Stage ConnectStage
	// First is the index of the group's first client in Program.Clients;
	// its clients are Clients[First : First+Count].
	First, Count int
	// Subscribes and Publishes say what the group does.
	Subscribes, Publishes bool
	// ConnectSpan is how long the group's connection ramp lasts.
	ConnectSpan time.Duration
	// Interval is the time between one client's messages at the target rate.
	Interval time.Duration
	// PayloadSize is the publish size (0 for non-publishers).
	PayloadSize int
	// Max and Inflight are the group's closed loop (publish.rate: max),
	// as in ClientPublish: its messages are not known before the run.
	Max      bool
	Inflight int
	// ExpectedPerMessage is the deliveries one message of this group
	// implies, averaged over the group's clients (exact per client in
	// Client.Publish).
	ExpectedPerMessage float64
	// Churn is the group's session timetable (lifetime: or churn:), nil
	// when its clients stay connected (see sessions.go).
	Churn *Sessions
}

// Client is one MQTT client, fully expanded.
type Client struct {
	// Index is the client's position in Program.Clients and its publisher
	// number in message headers.
	Index int
	// Group is the index of the client's group.
	Group int
	// N is the client number (%i).
	N        int
	ID       string
	Username string
	Password Secret
	// URL is the broker this client connects to (round-robin over urls).
	URL string
	// SourceAddr is the local address to bind, or "".
	SourceAddr string
	// ConnectAt is the client's offset in its stage's connection ramp.
	ConnectAt time.Duration
	// Subscriptions are the client's expanded filters.
	Subscriptions []ClientSubscription
	// WillTopic is the expanded will topic, if the group has a will.
	WillTopic string
	// Publish is nil for clients that do not publish.
	Publish *ClientPublish
}

// ClientSubscription is one expanded subscription.
type ClientSubscription struct {
	// Filter is the filter as sent in SUBSCRIBE (with any $share prefix).
	Filter string
	QoS    byte
	// Share is the $share group name, "" for an ordinary subscription.
	Share string
	// ShareKey identifies the share group for duplicate accounting: one
	// index per distinct (share name, filter) of the plan, -1 when Share is "".
	ShareKey int
	// NoLocal, RetainAsPublished and RetainHandling are the MQTT 5
	// subscription options, as in Subscription.
	NoLocal           bool
	RetainAsPublished bool
	RetainHandling    byte
	// Respond marks a responder's command subscription, Response a
	// requester's subscription to its response topic (reqresp.go).
	Respond, Response bool
}

// ClientPublish is one client's publishing.
type ClientPublish struct {
	Topic string
	QoS   byte
	// Size is the largest payload the client sends, the room its buffers
	// need: the fixed size, the largest of Sizes, or the template's
	// longest rendering for this client (with the header prefix).
	Size   int
	Retain bool
	// Payload, Header and Sizes are the group's (Publish): the template
	// rendered per message, where the header goes, the size drawn per
	// message. MeanSize is the expected payload bytes of one message.
	Payload  *PayloadTemplate
	Header   string
	Sizes    *SizeDist
	MeanSize float64
	Schedule Schedule
	// Max is the closed loop (publish.rate: max): Schedule is then empty
	// (its Interval 0), and the client publishes as fast as Inflight, its
	// window of QoS 1/2 publishes awaiting their acknowledgement (0 with
	// QoS 0), allows, until the end of steady or Schedule.Count.
	Max      bool
	Inflight int
	// Expected is the number of deliveries each message implies: one per
	// subscribing client whose filters match (a client with several
	// matching filters gets one copy) and one per matching $share group.
	Expected int
	// ExpectedByGroup splits Expected by receiving group (len = groups).
	ExpectedByGroup []int
	// ResponseTopic is the expanded response topic of a requester ("" for
	// plain publishing), ResponseTimeout its answers' deadline and
	// ExpectedResponses the answers each request implies: one per
	// responder it is delivered to (reqresp.go).
	ResponseTopic     string
	ResponseTimeout   time.Duration
	ExpectedResponses int
}

// PhasePlan is one phase of the timeline as planned.
type PhasePlan struct {
	Phase phase.Phase
	// Length is the planned length: exact for warmup, ramp and steady; the
	// connection ramps' span for connect; the upper bound for drain; 0 for
	// phases whose length depends on the broker (subscribe, disconnect).
	Length time.Duration
	// Connects is the number of connections opened in the phase.
	Connects int
	// Messages is the number of PUBLISH packets intended in the phase;
	// Deliveries the deliveries they imply; Bytes their payload bytes
	// (out) and DeliveredBytes the payload bytes delivered (in).
	Messages, Deliveries, Bytes, DeliveredBytes int64
	// Requests is the part of Messages that are requests (response_topic)
	// and Responses the answers they imply (reqresp.go).
	Requests, Responses int64
}

// Rate returns per-second figures of the phase: n spread over Length.
func (p PhasePlan) Rate(n int64) float64 {
	if p.Length <= 0 {
		return 0
	}
	return float64(n) / p.Length.Seconds()
}

// ShareGroups counts the distinct (share name, filter) pairs of the
// program, the range of ClientSubscription.ShareKey.
func (p *Program) ShareGroups() int {
	n := 0
	for i := range p.Clients {
		for _, s := range p.Clients[i].Subscriptions {
			if s.ShareKey+1 > n {
				n = s.ShareKey + 1
			}
		}
	}
	return n
}

// Publishers returns the number of publishing clients.
func (p *Program) Publishers() int {
	n := 0
	for i := range p.Clients {
		if p.Clients[i].Publish != nil {
			n++
		}
	}
	return n
}

// Compile turns a loaded plan into a Program. It is pure: the same plan
// and options always give the same program. The errors it can return are
// threshold errors (unknown metric, group or phase), positioned in the plan.
func Compile(p *Plan, opts CompileOptions) (*Program, error) {
	// Load has checked these already; a plan built in Go has not.
	if errs := checkWork(p); len(errs) > 0 {
		return nil, errs
	}
	if errs := checkTimeline(p, func(string) Pos { return Pos{File: p.File} }); len(errs) > 0 {
		return nil, errs
	}
	if errs := checkRequests(p); len(errs) > 0 {
		return nil, errs
	}
	if errs := checkChurn(p); len(errs) > 0 {
		return nil, errs
	}
	ths, errs := CompileThresholds(p)
	if len(errs) > 0 {
		return nil, errs
	}
	user := ths
	ths = append(ths, BuiltinThresholds(user)...)
	if sendsRequests(p) {
		ths = append(ths, BuiltinRequestThresholds(user)...)
	}
	if ListensOnly(p) {
		ths = append(ths, BuiltinListenThresholds(user)...)
	}
	runID := opts.RunID
	if runID == "" {
		runID = "run"
	}
	prog := &Program{
		Plan:       p,
		Thresholds: ths,
		Groups:     make([]GroupProgram, len(p.Groups)),
		Warmup:     p.Warmup,
		Ramp:       p.Ramp,
		Steady:     p.Duration,
		Drain:      p.Drain,
		DrainQuiet: p.DrainQuiet,
	}

	// Connect order: subscribing groups first (stage 0), then the rest.
	order := make([]int, 0, len(p.Groups))
	for stage := 0; stage < 2; stage++ {
		for gi := range p.Groups {
			if subscribes(&p.Groups[gi]) == (stage == 0) {
				order = append(order, gi)
			}
		}
	}
	total := 0
	for _, g := range p.Groups {
		total += g.Count
	}
	prog.Clients = make([]Client, 0, total)
	// One allocation for every client's subscriptions and one for every
	// publishing: a million small ones would cost their headers and
	// rounding (the plan's size is bounded, see limits.go).
	subs, pubs := 0, 0
	for _, g := range p.Groups {
		subs += g.Count * subscriptionCount(&g)
		if g.Publish != nil {
			pubs += g.Count
		}
	}
	subSlab := make([]ClientSubscription, 0, subs)
	pubSlab := make([]ClientPublish, 0, pubs)
	shareKeys := map[string]int{}
	var shareOwner []int // by share key
	for _, gi := range order {
		g := &p.Groups[gi]
		gp := &prog.Groups[gi]
		gp.Index, gp.Name, gp.First, gp.Count = gi, g.Name, len(prog.Clients), g.Count
		gp.Subscribes, gp.Publishes = subscribes(g), g.Publish != nil
		if !gp.Subscribes {
			gp.Stage = ConnectOthers
		}
		if g.ConnectRate > 0 {
			gp.ConnectSpan = time.Duration(float64(g.Count-1) / g.ConnectRate * float64(time.Second))
		}
		var prof *Profile
		if g.Publish != nil {
			gp.Interval = g.Publish.Interval(g.Count)
			if stages := stagesFor(p, g); len(stages) > 0 {
				if len(stages) != len(p.Stages) {
					return nil, Errors{{Pos: stages[0].Pos, Path: groupStagePath(gi), Msg: fmt.Sprintf("has %d stages, the plan's timeline %d: every stage list of a plan has the same names and durations", len(stages), len(p.Stages))}}
				}
				var err error
				if prof, gp.Interval, err = stageProfile(stages, p.Warmup, g.Count); err != nil {
					return nil, Errors{{Pos: stages[0].Pos, Path: "stages", Msg: err.Error()}}
				}
			}
			gp.PayloadSize = g.Publish.Size
			gp.Max, gp.Inflight = g.Publish.Max, g.Publish.Inflight
			prog.MaxPayload = max(prog.MaxPayload, g.Publish.Size)
		}
		for j := 0; j < g.Count; j++ {
			c := Client{Index: len(prog.Clients), Group: gi, N: g.Start + j, Password: g.Password}
			c.Username = g.Username.Expand(TemplateVars{N: c.N})
			if g.ClientID.IsZero() {
				c.ID = "mqplan-" + runID + "-" + g.Name + "-" + strconv.Itoa(c.N)
			} else {
				c.ID = g.ClientID.Expand(TemplateVars{N: c.N, Username: c.Username})
			}
			vars := TemplateVars{ClientID: c.ID, Username: c.Username, N: c.N}
			urls := p.Broker.URLs
			if len(urls) > 0 {
				c.URL = urls[c.Index%len(urls)]
			}
			if sa := p.Broker.SourceAddresses; len(sa) > 0 {
				c.SourceAddr = sa[c.Index%len(sa)]
			}
			if g.ConnectRate > 0 {
				c.ConnectAt = time.Duration(float64(j) / g.ConnectRate * float64(time.Second))
			}
			first := len(subSlab)
			for _, s := range g.Subscribe {
				f := s.Topic.Expand(vars)
				cs := ClientSubscription{Filter: f, QoS: s.QoS, ShareKey: -1,
					NoLocal: s.NoLocal, RetainAsPublished: s.RetainAsPublished, RetainHandling: s.RetainHandling}
				if share, filter, err := SplitShare(f); err == nil && share != "" {
					cs.Share = share
					key := share + "\x00" + filter
					k, ok := shareKeys[key]
					if !ok {
						k = len(shareKeys)
						shareKeys[key] = k
						// The share group's deliveries are credited to
						// the group of its first member (members
						// normally all sit in one group).
						shareOwner = append(shareOwner, gi)
					}
					cs.ShareKey = k
				}
				subSlab = append(subSlab, cs)
			}
			subSlab = appendRequestSubscriptions(subSlab, g, vars)
			if len(subSlab) > first {
				// Capped, so that appending to one client's list can
				// never write into the next one's.
				c.Subscriptions = subSlab[first:len(subSlab):len(subSlab)]
			}
			if g.Will != nil {
				c.WillTopic = g.Will.Topic.Expand(vars)
			}
			if pub := g.Publish; pub != nil {
				// pubSlab has room for every publisher: the pointer stays valid.
				size, mean := publishSize(pub, vars)
				prog.MaxPayload = max(prog.MaxPayload, size)
				pubSlab = append(pubSlab, ClientPublish{
					Topic:           pub.Topic.Expand(vars),
					QoS:             pub.QoS,
					Size:            size,
					Retain:          pub.Retain,
					ResponseTopic:   expandResponseTopic(pub, vars),
					ResponseTimeout: responseTimeout(pub, p.Drain),
					Max:             pub.Max,
					Inflight:        pub.Inflight,
					Payload:         pub.Payload,
					Header:          pub.Header,
					Sizes:           pub.Sizes,
					MeanSize:        mean,
					Schedule: Schedule{
						Interval: gp.Interval,
						Phase:    float64(j) / float64(g.Count),
						Warmup:   p.Warmup,
						Ramp:     p.Ramp,
						Steady:   p.Duration,
						Count:    pub.Count,
					},
				})
				if prof != nil {
					pubSlab[len(pubSlab)-1].Schedule = prof.Schedule(float64(j)/float64(g.Count), pub.Count)
				}
				if pub.Arrival == ArrivalPoisson {
					sch := &pubSlab[len(pubSlab)-1].Schedule
					sch.Poisson, sch.Arrivals = true, poissonArrivals{seed: p.Seed, client: uint64(c.Index)}
				}
				if d := pub.StartDelay; d != nil {
					sch := &pubSlab[len(pubSlab)-1].Schedule
					sch.Delay, sch.Phase = d.Draw(uint64(p.Seed), c.Index), 0 // the delays stagger the clients
				}
				if b := pub.Burst; b != nil {
					sch := &pubSlab[len(pubSlab)-1].Schedule
					sch.Burst, sch.BurstSize = b.Every, b.share(j, g.Count)
				}
				c.Publish = &pubSlab[len(pubSlab)-1]
			}
			prog.Clients = append(prog.Clients, c)
		}
	}

	if prog.Steady <= 0 {
		prog.Steady = steadyFromCounts(prog)
	}
	for i := range prog.Clients {
		if pub := prog.Clients[i].Publish; pub != nil {
			pub.Schedule.Steady = prog.Steady
		}
	}
	for gi, g := range p.Groups {
		if g.Churn != nil {
			prog.Groups[gi].Churn = compileSessions(g.Churn, g.Count, prog.Groups[gi].First, prog.Warmup+prog.Ramp+prog.Steady, p.Seed)
		} else if stagesMove(p.Stages, g.Name) {
			prog.Groups[gi].Churn = newStageSessions(p.Stages, g.Name, g.Count, prog.Warmup, prog.Warmup+prog.Ramp+prog.Steady)
		}
	}
	if err := computeExpectations(prog, shareOwner); err != nil {
		return nil, Errors{{Pos: Pos{File: p.File}, Path: "groups", Msg: err.Error()}}
	}
	if errs := expectResponses(prog); len(errs) > 0 {
		return nil, errs
	}
	if errs := checkChurnQoS(prog); len(errs) > 0 {
		return nil, errs
	}
	prog.Phases = planPhases(prog)
	prog.Stages = planStages(prog)
	return prog, nil
}

// steadyFromCounts sizes the steady phase of a plan whose publishers all
// have counts: just long enough for the slowest to send its last message.
func steadyFromCounts(prog *Program) time.Duration {
	var last time.Duration
	for i := range prog.Clients {
		if pub := prog.Clients[i].Publish; pub != nil {
			last = max(last, pub.Schedule.LastAt())
		}
	}
	steady := last - prog.Warmup - prog.Ramp + time.Millisecond
	if steady < time.Millisecond {
		steady = time.Millisecond
	}
	return steady
}

// maxExpectationWork bounds the per-client subscriptions that computing
// the expectations may visit (see subscriptionIndex): a plan needs that
// many only when many distinct publish topics each match many clients
// that have several filters, and past it the plan is refused instead of
// taking minutes.
const maxExpectationWork = 50_000_000

// maxExpectationTable bounds the expected-deliveries-by-group tables,
// in entries (distinct tables × groups): equal tables are shared, so only
// a plan with very many groups and very many distinct delivery patterns
// comes near it.
const maxExpectationTable = 8_000_000

// computeExpectations fills ClientPublish.Expected and ExpectedByGroup
// (see expectationTables, by group) and each group's ExpectedPerMessage.
// shareOwner[k] is the group credited with share group k's deliveries.
func computeExpectations(prog *Program, shareOwner []int) error {
	byGroup := deliveryClasses{n: len(prog.Groups), share: shareOwner, noun: "groups",
		of: func(c int) int { return prog.Clients[c].Group }}
	err := expectationTables(prog, byGroup, func(c int, table []int) { setExpected(prog.Clients[c].Publish, table) })
	if err != nil {
		return err
	}
	for gi := range prog.Groups {
		gp := &prog.Groups[gi]
		if !gp.Publishes || gp.Count == 0 {
			continue
		}
		sum := 0
		for _, c := range prog.Clients[gp.First : gp.First+gp.Count] {
			sum += c.Publish.Expected
		}
		gp.ExpectedPerMessage = float64(sum) / float64(gp.Count)
	}
	return nil
}

// deliveryClasses is how expectationTables splits a message's deliveries:
// by receiving group (ExpectedByGroup) or by the shard that owns the
// receiver (Assignment.ExpectedByShard).
type deliveryClasses struct {
	// n is the number of classes, the length of each table.
	n int
	// of is the class of client c's deliveries.
	of func(c int) int
	// share[k] is the class credited with share group k's deliveries.
	share []int
	// noun names the classes in the limit's message.
	noun string
}

// expectationTables calls set for every publishing client with the
// deliveries one of its messages implies, by class, using a topic trie of
// every subscription matched once per publishing client (not per
// message). A client receives one copy of a message however many of its
// subscriptions match, and none of its own through a no_local
// subscription (unless another of its subscriptions matches without it).
// Tables are shared between publishers with the same pattern: set must
// not write them.
//
// The cost is O(subscriptions + publishers × trie nodes a topic reaches),
// plus the per-client subscriptions of several-filter clients that each
// distinct topic matches (bounded by maxExpectationWork).
func expectationTables(prog *Program, cl deliveryClasses, set func(c int, table []int)) error {
	var ix subscriptionIndex
	plainSubs := make([]int32, len(prog.Clients)) // ordinary (not $share) subscriptions per client
	noLocal := make([]bool, len(prog.Clients))    // the client has a no_local subscription
	for i := range prog.Clients {
		for _, s := range prog.Clients[i].Subscriptions {
			if s.Share == "" {
				plainSubs[i]++
			}
			noLocal[i] = noLocal[i] || s.NoLocal
		}
	}
	shareIndexed := make([]bool, len(cl.share))
	for i := range prog.Clients {
		c := &prog.Clients[i]
		for _, s := range c.Subscriptions {
			_, filter, err := SplitShare(s.Filter)
			if err != nil {
				continue // validated at load time; unreachable
			}
			n := ix.node(filter)
			switch {
			case s.Share != "":
				if !shareIndexed[s.ShareKey] {
					shareIndexed[s.ShareKey] = true
					n.shares = addCount(n.shares, cl.share[s.ShareKey])
				}
			case plainSubs[i] == 1 && !s.NoLocal:
				n.plain = addCount(n.plain, cl.of(c.Index))
			default:
				n.subs = append(n.subs, indexedSub{client: c.Index, group: cl.of(c.Index), noLocal: s.NoLocal})
			}
		}
	}
	ix.root.compact()

	// seen[c] == stamp marks client c as counted for the current topic.
	seen := make([]int32, len(prog.Clients))
	stamp := int32(0)
	// tables interns the by-class tables, keyed by their non-zero
	// entries, so that publishers with the same pattern share one.
	tables := map[string][]int{}
	tableEntries := 0
	by := make([]int, cl.n)
	var key []byte
	var prevTopic string
	var prevTable []int
	for i := range prog.Clients {
		pub := prog.Clients[i].Publish
		if pub == nil {
			continue
		}
		self := prog.Clients[i].Index
		// Clients of a group with a fixed topic follow each other: the
		// expectation of the previous one is this one's unless no_local
		// makes it depend on who publishes.
		if prevTable != nil && pub.Topic == prevTopic && !noLocal[self] {
			set(i, prevTable)
			continue
		}
		clear(by)
		stamp++
		ix.match(pub.Topic, func(n *trieNode) {
			for _, gc := range n.plain {
				by[gc.group] += gc.n
			}
			for _, gc := range n.shares {
				by[gc.group] += gc.n
			}
			ix.work += len(n.subs)
			for _, s := range n.subs {
				if (s.noLocal && s.client == self) || seen[s.client] == stamp {
					continue
				}
				seen[s.client] = stamp
				by[s.group]++
			}
		})
		if ix.work > maxExpectationWork {
			return fmt.Errorf("the expected deliveries need more than %d subscription matches (publish topics × the matching subscriptions of clients with several filters or no_local); give those clients one filter each, or publish on fewer distinct topics", maxExpectationWork)
		}
		key = key[:0]
		for g, n := range by {
			if n != 0 {
				key = strconv.AppendInt(key, int64(g), 36)
				key = append(key, ':')
				key = strconv.AppendInt(key, int64(n), 36)
				key = append(key, ',')
			}
		}
		table, ok := tables[string(key)]
		if !ok {
			tableEntries += len(by)
			if tableEntries > maxExpectationTable {
				return fmt.Errorf("the publishers' expected deliveries differ in more than %d ways × %d %s, more than the limit of %d table entries; use fewer %s or fewer distinct topics", len(tables), cl.n, cl.noun, maxExpectationTable, cl.noun)
			}
			table = slices.Clone(by)
			tables[string(key)] = table
		}
		set(i, table)
		if !noLocal[self] {
			prevTopic, prevTable = pub.Topic, table
		} else {
			prevTable = nil
		}
	}
	return nil
}

// setExpected gives pub its by-group table (shared, never written after)
// and its sum.
func setExpected(pub *ClientPublish, table []int) {
	pub.ExpectedByGroup = table
	pub.Expected = 0
	for _, n := range table {
		pub.Expected += n
	}
}

// planPhases computes each phase's planned length and load, exactly, from
// every publisher's schedule in closed form (O(publishers), whatever the
// length of the phases). The products can exceed int64 for absurd plans
// (a year of nanosecond intervals to a million subscribers): they
// saturate at math.MaxInt64 rather than wrap to a negative figure.
func planPhases(prog *Program) []PhasePlan {
	phases := make([]PhasePlan, phase.Count)
	for _, ph := range phase.All {
		phases[ph].Phase = ph
	}
	var span [connectStages]time.Duration
	for _, gp := range prog.Groups {
		span[gp.Stage] = max(span[gp.Stage], gp.ConnectSpan)
	}
	phases[phase.Connect].Length = satAdd(span[ConnectSubscribers], span[ConnectOthers])
	phases[phase.Connect].Connects = len(prog.Clients)
	phases[phase.Warmup].Length = prog.Warmup
	phases[phase.Ramp].Length = prog.Ramp
	phases[phase.Steady].Length = prog.Steady
	phases[phase.Drain].Length = prog.Drain
	// A churning group's reconnections are the publishing phases' connects.
	for _, gp := range prog.Groups {
		if gp.Churn != nil {
			for k := 0; k < 3; k++ {
				ph := [...]phase.Phase{phase.Warmup, phase.Ramp, phase.Steady}[k]
				lo := [...]time.Duration{0, prog.Warmup, prog.Warmup + prog.Ramp}[k]
				hi := [...]time.Duration{prog.Warmup, prog.Warmup + prog.Ramp, prog.Warmup + prog.Ramp + prog.Steady}[k]
				phases[ph].Connects += gp.Churn.Reconnects(lo, hi)
			}
		}
	}
	// Publishing phase k spans [bounds[k], bounds[k+1]) of the schedule.
	publishing := [...]phase.Phase{phase.Warmup, phase.Ramp, phase.Steady}
	bounds := []time.Duration{0, prog.Warmup, prog.Warmup + prog.Ramp, prog.Warmup + prog.Ramp + prog.Steady}
	for i := range prog.Clients {
		pub := prog.Clients[i].Publish
		if pub == nil {
			continue
		}
		for k, ph := range publishing {
			n := int64(prog.Sends(&prog.Clients[i], bounds[k], bounds[k+1]))
			d := satMul(n, int64(pub.Expected))
			pp := &phases[ph]
			pp.Messages = satAdd(pp.Messages, n)
			pp.Deliveries = satAdd(pp.Deliveries, d)
			pp.Bytes = satAdd(pp.Bytes, meanBytes(n, pub.MeanSize))
			pp.DeliveredBytes = satAdd(pp.DeliveredBytes, meanBytes(d, pub.MeanSize))
			if pub.ResponseTopic != "" {
				pp.Requests = satAdd(pp.Requests, n)
				pp.Responses = satAdd(pp.Responses, satMul(n, int64(pub.ExpectedResponses)))
			}
		}
	}
	return phases
}

// satAdd is a+b for non-negative a and b, saturating at math.MaxInt64.
func satAdd[T ~int64](a, b T) T {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// satMul is a×b for non-negative a and b, saturating at math.MaxInt64.
func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// PhaseOf returns the publishing phase that contains offset t from the
// start of warmup (warmup, ramp or steady).
func (p *Program) PhaseOf(t time.Duration) phase.Phase {
	switch {
	case t < p.Warmup:
		return phase.Warmup
	case t < p.Warmup+p.Ramp:
		return phase.Ramp
	default:
		return phase.Steady
	}
}

// ConnectStage orders the connection ramps within the connect phase.
type ConnectStage uint8

// The connect stages, in order.
const (
	// ConnectSubscribers is the groups that subscribe: they connect and
	// subscribe first, so that no message is published before a
	// subscription that expects it is in.
	ConnectSubscribers ConnectStage = iota
	// ConnectOthers is the groups that only publish (or only connect).
	ConnectOthers
	// connectStages is the number of stages.
	connectStages
)

// ConnectStages lists the connect stages in order.
var ConnectStages = [...]ConnectStage{ConnectSubscribers, ConnectOthers}

// String summarises a client for error messages.
func (c *Client) String() string {
	return fmt.Sprintf("client %q", c.ID)
}

// PeakRate is the program's highest publish rate in messages per second
// (at the target rate, all publishers together).
func (p *Program) PeakRate() float64 {
	r := 0.0
	for i := range p.Clients {
		if pub := p.Clients[i].Publish; pub != nil && pub.Schedule.Interval > 0 {
			r += float64(time.Second) / float64(pub.Schedule.Interval)
		}
	}
	return math.Round(r*1000) / 1000
}
