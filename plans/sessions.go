package plans

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Clients over time (issue 10, "churn"): a group with `lifetime:` or
// `churn:` has each of its clients end its session with a normal
// DISCONNECT and start a new one, under the same client id, `away` later.
// When that happens is a pure function of the plan, so that explain,
// validate and the tests know every session without a broker, and the
// runner only follows the timetable.
//
// The timetable of a group of n clients has one period P, the time between
// two disconnects of one client: `lifetime + away`, or `n / churn` (churn
// R/s: R of the group's clients leave each second, taken round-robin so
// every client churns equally). Client j (0-based in its group) leaves at
//
//	d(j, k) = (j+1)·P/n + k·P      k = 0, 1, 2, ...
//
// (offsets from the start of warmup; the first session is cut short so
// that the clients leave in turn, one every P/n, never all together), and
// comes back at d(j, k) + away. A client leaves only when it comes back
// before publishing ends (d(j, k) + away < warmup + ramp + steady), so
// every client is connected through the drain, and its kept session
// delivers what was queued for it while it was away.
//
// Accounting. A publisher that is away does not publish: the messages its
// schedule intends while it is away are not part of its timetable (they
// are neither sent nor unsent; Sends counts them out in closed form per
// away window). A subscriber that is away keeps its session (the loader
// requires clean_start: false, a session expiry that outlasts the away
// time, and QoS 1 or 2 on every subscription and every message that
// reaches it), so the broker queues what it misses and every message stays
// expected: the expectations do not change with churn. A subscriber with
// a clean session (clean_start: true) subscribes again on each return, and
// what is published while it is away is not expected; around its leaves
// and returns, the runner decides from observable events which messages
// are expected and which are ambiguous (runner/clean_boundary.go), which
// needs QoS 1 or 2 and publishers on a schedule (checkChurnQoS).
//
// The same timetable type serves a random lifetime (sessions_random.go)
// and a stage's clients (stage_clients.go), which keep their leaves, and
// the stages' returns, leave by leave.

// Churn is a group's `lifetime:` or `churn:`, as written (exactly one of
// Lifetime and Rate is set).
type Churn struct {
	// Lifetime is how long a session lasts (but a client's first, which
	// is cut short so that the group's clients leave in turn); with
	// LifetimeMax, the shortest of a uniform draw (sessions_random.go).
	Lifetime time.Duration `json:"lifetime,omitempty"`
	// LifetimeMax, when above Lifetime, is the longest session of
	// `lifetime: {min, max}`: real devices do not all stay the same time.
	LifetimeMax time.Duration `json:"lifetime_max,omitempty"`
	// Rate is how many of the group's clients leave per second.
	Rate float64 `json:"rate,omitempty"`
	// Away is how long a client stays disconnected before its next
	// session (0: it reconnects at once).
	Away time.Duration `json:"away"`
	// Pos is where lifetime or churn is written.
	Pos Pos `json:"-"`
	// Path is the plan path of that key, for errors.
	Path string `json:"-"`
}

// Period is the time between two disconnects of one client of a group of
// n clients.
func (c *Churn) Period(n int) time.Duration {
	if c.Lifetime > 0 {
		return satAdd(c.Lifetime, c.Away)
	}
	if c.Rate <= 0 || n <= 0 {
		return 0
	}
	return time.Duration(math.Min(float64(n)/c.Rate*float64(time.Second), math.MaxInt64))
}

// Sessions is a group's compiled churn timetable (see Churn): immutable,
// one per group, O(1) to ask about any client's k-th session.
type Sessions struct {
	// Period is the time between two disconnects of one client; Away the
	// time it then stays disconnected; End the end of publishing (warmup
	// + ramp + steady), before which every client is back.
	Period, Away, End time.Duration
	// Clients is the group's count.
	Clients int
	// LifetimeMin and LifetimeMax are a random lifetime's bounds (Period
	// is then 0: the timetable is drawn, see sessions_random.go).
	LifetimeMin, LifetimeMax time.Duration
	// Staged: the stages' clients move the group (stage_clients.go);
	// each window has its own length, and Period and Away are 0.
	Staged bool
	// drawn is a random lifetime's or the stage clients' timetable, nil
	// for a periodic one.
	drawn *drawnSessions
}

// Drawn reports whether the timetable is kept leave by leave (a random
// lifetime, or stage clients: see Staged) rather than periodic.
func (s *Sessions) Drawn() bool { return s != nil && s.drawn != nil }

// newSessions is the periodic timetable of a group of count clients for
// publishing that ends at end.
func newSessions(c *Churn, count int, end time.Duration) *Sessions {
	return &Sessions{Period: c.Period(count), Away: c.Away, End: end, Clients: count}
}

// compileSessions is group's timetable: periodic (newSessions), or drawn
// from seed and each client's index in the plan (the group's first is
// first) when the lifetime is a range (newDrawnSessions).
func compileSessions(c *Churn, count, first int, end time.Duration, seed uint64) *Sessions {
	if c.LifetimeMax > c.Lifetime {
		return newDrawnSessions(c, count, first, end, seed)
	}
	return newSessions(c, count, end)
}

// first is client j's first disconnect, (j+1)·P/n, exactly ((j+1) ≤ n,
// so the quotient fits).
func (s *Sessions) first(j int) time.Duration {
	hi, lo := bits.Mul64(uint64(j+1), uint64(s.Period))
	q, _ := bits.Div64(hi, lo, uint64(s.Clients))
	return time.Duration(q)
}

// Disconnects is how many times client j (0-based in its group) leaves:
// its sessions are one more.
func (s *Sessions) Disconnects(j int) int {
	if s == nil || j < 0 || j >= s.Clients {
		return 0
	}
	if s.drawn != nil {
		return s.drawn.off[j+1] - s.drawn.off[j]
	}
	if s.Period <= 0 {
		return 0
	}
	x := s.End - s.Away - s.first(j) // d(j, k) < x
	if x <= 0 {
		return 0
	}
	return int((x-1)/s.Period) + 1
}

// DisconnectAt is when client j leaves for the k-th time (0-based), an
// offset from the start of warmup; it comes back Away later.
func (s *Sessions) DisconnectAt(j, k int) time.Duration {
	if s.drawn != nil {
		return s.drawn.at[s.drawn.off[j]+k]
	}
	return s.first(j) + time.Duration(k)*s.Period
}

// Session is client j's k-th session (0-based, k ≤ Disconnects(j)) as
// [start, end) offsets from the start of warmup: the first starts when the
// client first connects (start 0 here: before publishing), the last ends
// when the run disconnects everyone (end math.MaxInt64).
func (s *Sessions) Session(j, k int) (start, end time.Duration) {
	start, end = 0, math.MaxInt64
	if k > 0 {
		start = s.BackAt(j, k-1)
	}
	if k < s.Disconnects(j) {
		end = s.DisconnectAt(j, k)
	}
	return start, end
}

// Total is the number of disconnects of all the group's clients
// (O(clients), never O(sessions)).
func (s *Sessions) Total() int {
	n := 0
	for j := 0; j < s.Clients; j++ {
		n += s.Disconnects(j)
	}
	return n
}

// Reconnects counts the group's reconnections (at d + Away, or each
// window's own return) in [from, to).
func (s *Sessions) Reconnects(from, to time.Duration) int {
	n := 0
	for j := 0; j < s.Clients; j++ {
		if s.windowed() {
			n += s.drawn.backsBefore(j, to) - s.drawn.backsBefore(j, from)
			continue
		}
		n += s.countIn(j, from-s.Away, to-s.Away)
	}
	return n
}

// BackAt is when client j comes back from its k-th leave: Away after it,
// or the window's own return; math.MaxInt64 when it stays away to the end.
func (s *Sessions) BackAt(j, k int) time.Duration {
	if s.windowed() {
		return s.drawn.back[s.drawn.off[j]+k]
	}
	return s.DisconnectAt(j, k) + s.Away
}

// windowed reports whether each away window has its own length (stage
// clients) rather than Away.
func (s *Sessions) windowed() bool { return s.drawn != nil && s.drawn.back != nil }

// hasAway reports whether any client is ever away for some time.
func (s *Sessions) hasAway() bool { return s != nil && (s.Away > 0 || s.windowed()) }

// countIn is how many of client j's disconnects fall in [from, to).
func (s *Sessions) countIn(j int, from, to time.Duration) int {
	return s.disconnectsBefore(j, to) - s.disconnectsBefore(j, from)
}

// disconnectsBefore is how many of client j's disconnects come before t.
func (s *Sessions) disconnectsBefore(j int, t time.Duration) int {
	if s.drawn != nil {
		return s.drawn.before(j, t)
	}
	k := s.Disconnects(j)
	f := s.first(j)
	if t <= f {
		return 0
	}
	return min(int((t-f-1)/s.Period)+1, k)
}

// Skipped is how many messages of schedule sc, client j's, are intended
// while the client is away within [from, to): they are not part of its
// timetable. It costs O(away windows in the range), each a closed form.
func (s *Sessions) Skipped(sc Schedule, j int, from, to time.Duration) int {
	if !s.hasAway() || to <= from {
		return 0
	}
	n := 0
	var lo int // the windows before end by from
	if s.windowed() {
		lo = s.drawn.backsBefore(j, from+1)
	} else {
		lo = s.disconnectsBefore(j, from-s.Away+1)
	}
	hi := s.disconnectsBefore(j, to)
	for k := lo; k < hi; k++ {
		d := s.DisconnectAt(j, k)
		n += sc.Messages(max(d, from), min(s.BackAt(j, k), to))
	}
	return n
}

// Sends is how many messages client j with schedule sc sends in [from,
// to): its schedule's, less those intended while it is away.
func (s *Sessions) Sends(sc Schedule, j int, from, to time.Duration) int {
	return sc.Messages(from, to) - s.Skipped(sc, j, from, to)
}

// Back returns, when offset t falls while client j is away, when it comes
// back (true); else false.
func (s *Sessions) Back(j int, t time.Duration) (time.Duration, bool) {
	if !s.hasAway() {
		return 0, false
	}
	k := s.disconnectsBefore(j, t+1) - 1 // the last disconnect at or before t
	if k < 0 {
		return 0, false
	}
	if b := s.BackAt(j, k); t < b {
		return b, true
	}
	return 0, false
}

// ChurnOf returns the churn timetable of client c's group and c's index in
// the group, or nil when the group does not churn.
func (p *Program) ChurnOf(c *Client) (*Sessions, int) {
	gp := &p.Groups[c.Group]
	return gp.Churn, c.Index - gp.First
}

// Sends is how many messages client c sends in [from, to): its schedule's,
// less those intended while it is away (see Sessions).
func (p *Program) Sends(c *Client, from, to time.Duration) int {
	if c.Publish == nil {
		return 0
	}
	s, j := p.ChurnOf(c)
	if s == nil {
		return c.Publish.Schedule.Messages(from, to)
	}
	return s.Sends(c.Publish.Schedule, j, from, to)
}

// maxChurnDisconnects bounds the disconnects a plan's churn implies, all
// groups together: counting the messages a churning publisher skips costs
// one closed form per away window, and the runner follows each one.
const maxChurnDisconnects = 10_000_000

// checkChurn checks the churning groups against the rest of the plan: the
// timetable must fit, and what the accounting cannot count exactly yet is
// refused with a positioned "not supported yet".
func checkChurn(p *Plan) Errors {
	var errs Errors
	end := satAdd(satAdd(p.Warmup, p.Ramp), p.Duration)
	total, drawn := 0.0, 0.0
	for i := range p.Groups {
		g := &p.Groups[i]
		c := g.Churn
		if c == nil {
			continue
		}
		path := "groups[" + strconv.Itoa(i) + "]"
		bad := func(key, format string, args ...any) {
			errs = append(errs, &Error{Pos: c.Pos, Path: path + "." + key, Msg: fmt.Sprintf(format, args...)})
		}
		key := "lifetime"
		if c.Rate > 0 {
			key = "churn"
		}
		period := c.Period(g.Count)
		switch {
		case period <= 0:
			continue // refused where it was read
		case c.Rate > 0 && period <= c.Away:
			bad(key, "%s/s over %d clients gives each client %s from one disconnect to the next, not more than away (%s): each would be away longer than connected; lower churn or away", strconv.FormatFloat(c.Rate, 'g', -1, 64), g.Count, period, c.Away)
			continue
		}
		if end > 0 {
			total += float64(g.Count) * (float64(end)/float64(period) + 1)
			if c.LifetimeMax > c.Lifetime {
				drawn += float64(g.Count) * (float64(end)/float64(period) + 1)
			}
		}
		if g.Reconnect != nil {
			bad(key, "with reconnect is not supported yet: a dropped client of a churning group would need its reconnects merged with the planned ones; drop reconnect")
		}
		if g.Respond != nil || g.Publish != nil && !g.Publish.ResponseTopic.IsZero() {
			bad(key, "with request/response (respond or publish.response_topic) is not supported yet: the answers to a client that is away would need their own accounting; drop lifetime/churn from this group")
		}
		if g.Publish.ClosedLoop() {
			bad(key, "with publish.rate: max is not supported yet: a churning publisher's sends follow its sessions' schedule, which a closed loop does not have; give the group a rate")
		}
		if g.Publish != nil && g.Publish.Count > 0 {
			bad(key, "with publish.count is not supported yet: a churning publisher skips the messages due while it is away; drop count and give duration")
		}
		if len(g.Subscribe) == 0 {
			continue
		}
		if g.Protocol >= 5 && !g.CleanStart && g.SessionExpiry < c.Away+p.Broker.ConnectTimeout {
			bad(key, "needs the session to outlast the time away: session_expiry (%s) must be at least away + broker.connect_timeout (%s), or the broker may drop the session and what it queued", g.SessionExpiry, c.Away+p.Broker.ConnectTimeout)
		}
		for si, s := range g.Subscribe {
			if s.QoS == 0 {
				errs = append(errs, &Error{Pos: s.Pos, Path: path + ".subscribe[" + strconv.Itoa(si) + "].qos",
					Msg: "must be 1 or 2 in a churning group: a broker need not queue QoS 0 messages for a client that is away, so whether they are delivered is not known"})
			}
			if strings.HasPrefix(s.Topic.String(), "$share/") {
				errs = append(errs, &Error{Pos: s.Pos, Path: path + ".subscribe[" + strconv.Itoa(si) + "]",
					Msg: "a shared subscription in a churning group is not supported yet: brokers differ in whether a member that is away gets its share queued"})
			}
		}
	}
	if drawn > maxRandomDisconnects {
		errs = append(errs, &Error{Pos: Pos{File: p.File}, Path: "groups", Msg: fmt.Sprintf(
			"the random lifetimes (lifetime: {min, max}) imply up to %s disconnects at their shortest, more than the limit of %s (each is drawn and kept at compile time): raise lifetime's min, lower count or shorten the run",
			thousands(int(min(drawn, 1e15))), thousands(maxRandomDisconnects))})
	}
	if total > maxChurnDisconnects {
		errs = append(errs, &Error{Pos: Pos{File: p.File}, Path: "groups", Msg: fmt.Sprintf(
			"the churn implies about %s disconnects, more than the limit of %s: lower churn, lengthen lifetime or shorten the run",
			thousands(int(min(total, 1e15))), thousands(maxChurnDisconnects))})
	}
	return errs
}

// checkChurnQoS refuses QoS 0 messages to a churning subscriber: a broker
// need not queue them for a session that is away (Mosquitto does not by
// default), so whether they are delivered is not known. It reads the
// expectations by group, once per publisher.
func checkChurnQoS(prog *Program) Errors {
	var churning []int
	for gi, gp := range prog.Groups {
		if gp.Churn != nil && gp.Subscribes {
			churning = append(churning, gi)
		}
	}
	if len(churning) == 0 {
		return nil
	}
	var errs Errors
	seen := map[[2]int]bool{}
	for i := range prog.Clients {
		c := &prog.Clients[i]
		pub := c.Publish
		if pub == nil || pub.QoS > 0 && !pub.Max {
			continue
		}
		for _, gi := range churning {
			if pub.QoS > 0 {
				// publish.rate: max: its sends have no schedule, which
				// a clean churning subscriber's windows are counted on.
				if pub.ExpectedByGroup[gi] == 0 || !prog.Plan.Groups[gi].CleanStart || seen[[2]int{c.Group, gi}] {
					continue
				}
				seen[[2]int{c.Group, gi}] = true
				pg := &prog.Plan.Groups[c.Group]
				errs = append(errs, &Error{Pos: pg.Publish.Pos, Path: "groups[" + strconv.Itoa(c.Group) + "].publish.rate",
					Msg: fmt.Sprintf("max is not supported yet with group %s's messages reaching %s, a churning group with a clean session: what its session windows expect is counted on the publisher's schedule, which a closed loop does not have; give a rate", pg.Name, prog.Groups[gi].Name)})
				continue
			}
			if pub.ExpectedByGroup[gi] == 0 || seen[[2]int{c.Group, gi}] {
				continue
			}
			seen[[2]int{c.Group, gi}] = true
			pg := &prog.Plan.Groups[c.Group]
			errs = append(errs, &Error{Pos: pg.Publish.Pos, Path: "groups[" + strconv.Itoa(c.Group) + "].publish.qos",
				Msg: fmt.Sprintf("must be 1 or 2: group %s's messages reach the churning group %s, and a broker need not queue QoS 0 messages for a session that is away", pg.Name, prog.Groups[gi].Name)})
		}
	}
	return errs
}
