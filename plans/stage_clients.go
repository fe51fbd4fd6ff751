package plans

import (
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Stage clients (issue 10, stages): a stage may give `clients: {devices:
// 200}`, the number of the named group's clients connected at the end of
// the stage. Over the stages a group's connected count moves linearly from
// the previous stage's count to its own, as the rate does (a stage of 0s
// jumps; a stage that does not name the group keeps its count); before the
// stages, after the connect phase and through warmup, every client of the
// group is connected, as in any plan.
//
// Who is connected is LIFO: with C(t) the count at offset t, client j
// (0-based in its group) is connected while C(t) ≥ j+1, so the
// highest-numbered client leaves first and the lowest-numbered returns
// first. Each linear stage crosses j+1 at most once, so client j's
// absences are at most one per stage: the timetable is computed once at
// compile time into the same windows as a random lifetime's
// (sessions_random.go), each [leave, back) with its own length, the last
// possibly without a return (back = math.MaxInt64: the client stays away
// through the drain). Leaves and returns are planned churn: a normal
// DISCONNECT and a new session under the same id (runner/churn.go), and
// the accounting is churn's (sessions.go): an away publisher skips its
// messages, an away subscriber keeps its session and what the broker
// queued for it is expected. A subscribing group must therefore be back to
// its count by the end of the stages (its queue would never be read
// otherwise), and clean sessions are refused until their boundary
// accounting exists.

// loadStageClients reads a stage's clients: {group: count, ...}; the group
// names are checked against the plan's groups once both are read
// (checkStageClients).
func (l *loader) loadStageClients(e keyEntry, st *Stage) {
	if e.val.Kind != yaml.MappingNode {
		l.errorf(e.val, e.path, "must be a mapping of group name to connected clients, like {devices: 200}, got %s", describeNode(e.val))
		return
	}
	var names []string
	for i := 0; i+1 < len(e.val.Content); i += 2 {
		names = append(names, e.val.Content[i].Value)
	}
	s := l.section(e.path, e.val, names, false)
	st.Clients = map[string]int{}
	st.clientsAt = map[string]clientsKey{}
	for i := 0; i+1 < len(e.val.Content); i += 2 {
		name := e.val.Content[i].Value
		n := -1
		s.integer(name, &n, 0, maxGroupCount)
		if n >= 0 {
			st.Clients[name] = n
			k, _ := s.get(name)
			st.clientsAt[name] = clientsKey{pos: l.pos(e.val.Content[i]), path: k.path}
		}
	}
}

// clientsKey is where a stage's clients count of one group is written,
// for errors.
type clientsKey struct {
	pos  Pos
	path string
}

// maxStageClientWork bounds stages × clients of the groups a stage's
// clients names: each client's windows are found stage by stage, and kept
// (16 bytes a window).
const maxStageClientWork = 4_000_000

// checkStageClients checks the stages' clients against the groups: each
// names a group, at most its count, and what the accounting cannot count
// exactly yet is refused with a positioned "not supported yet".
func checkStageClients(p *Plan) Errors {
	var errs Errors
	groups := map[string]int{}
	var names []string
	for i, g := range p.Groups {
		groups[g.Name] = i
		names = append(names, g.Name)
	}
	named := map[int]bool{}
	for si := range p.Stages {
		st := &p.Stages[si]
		for _, name := range slices.Sorted(maps.Keys(st.Clients)) {
			gi, ok := groups[name]
			if !ok {
				msg := fmt.Sprintf("no group is named %q", name)
				if s := suggestKey(name, names); s != "" {
					msg += fmt.Sprintf(": did you mean %q?", s)
				}
				errs = append(errs, &Error{Pos: st.clientsAt[name].pos, Path: st.clientsAt[name].path, Msg: msg})
				continue
			}
			if n, count := st.Clients[name], p.Groups[gi].Count; n > count {
				errs = append(errs, &Error{Pos: st.clientsAt[name].pos, Path: st.clientsAt[name].path, Msg: fmt.Sprintf(
					"must be at most the group's count (%d), got %d: a stage connects some of the group's clients", count, n)})
				continue
			}
			named[gi] = true
		}
	}
	work := 0
	for gi := range named {
		work += p.Groups[gi].Count * len(p.Stages)
	}
	if work > maxStageClientWork {
		return append(errs, &Error{Pos: p.Stages[0].Pos, Path: "stages", Msg: fmt.Sprintf(
			"%s stages × %s clients of the groups their clients name is %s, more than the limit of %s",
			thousands(len(p.Stages)), thousands(work/len(p.Stages)), thousands(work), thousands(maxStageClientWork))})
	}
	for _, gi := range slices.Sorted(maps.Keys(named)) {
		g := &p.Groups[gi]
		at, path := firstClientsOf(p, g.Name)
		bad := func(format string, args ...any) {
			errs = append(errs, &Error{Pos: at, Path: path, Msg: fmt.Sprintf(format, args...)})
		}
		if g.Churn != nil {
			bad("not supported yet with lifetime or churn on group %s: its clients would follow two timetables; drop one", g.Name)
		}
		if g.Reconnect != nil {
			bad("not supported yet for group %s with reconnect: a dropped client would need its reconnects merged with the planned ones", g.Name)
		}
		if g.Respond != nil || g.Publish != nil && !g.Publish.ResponseTopic.IsZero() {
			bad("not supported yet for group %s with request/response: the answers to a client that is away would need their own accounting", g.Name)
		}
		if g.Publish != nil && g.Publish.Count > 0 {
			bad("not supported yet for group %s with publish.count: an away publisher skips the messages due meanwhile; give the stages' rate", g.Name)
		}
		if len(g.Subscribe) == 0 {
			continue
		}
		last := g.Count
		for _, st := range p.Stages {
			if n, ok := st.Clients[g.Name]; ok {
				last = n
			}
		}
		// A clean session (runner/clean_run.go) expects nothing while
		// away, so it may end the stages away; a kept one may not.
		if last != g.Count && !g.CleanStart {
			bad("leaves %d of subscribing group %s's %d clients away at the end of the stages: what the broker queued for them would never be read; end with clients: {%s: %d} or give the group clean_start: true (not supported yet)", g.Count-last, g.Name, g.Count, g.Name, g.Count)
		}
		if !g.CleanStart && g.Protocol >= 5 {
			s := newStageSessions(p.Stages, g.Name, g.Count, p.Warmup, satAdd(p.Warmup, StagesTotal(p.Stages)))
			if away := s.LongestAway(); g.SessionExpiry < away+p.Broker.ConnectTimeout {
				bad("needs group %s's sessions to outlast the time away: session_expiry (%s) must be at least the longest time a client is away (%s) + broker.connect_timeout (%s)", g.Name, g.SessionExpiry, away, p.Broker.ConnectTimeout)
			}
		}
		for si, s := range g.Subscribe {
			gpath := "groups[" + strconv.Itoa(gi) + "].subscribe[" + strconv.Itoa(si) + "]"
			if s.QoS == 0 {
				errs = append(errs, &Error{Pos: s.Pos, Path: gpath + ".qos",
					Msg: "must be 1 or 2 in a group whose clients the stages move: a broker need not queue QoS 0 messages for a client that is away"})
			}
			if strings.HasPrefix(s.Topic.String(), "$share/") {
				errs = append(errs, &Error{Pos: s.Pos, Path: gpath,
					Msg: "a shared subscription in a group whose clients the stages move is not supported yet: brokers differ in whether a member that is away gets its share queued"})
			}
		}
	}
	return errs
}

// firstClientsOf is where the first stage naming group name says so.
func firstClientsOf(p *Plan, name string) (Pos, string) {
	for _, st := range p.Stages {
		if _, ok := st.Clients[name]; ok {
			return st.clientsAt[name].pos, st.clientsAt[name].path
		}
	}
	return Pos{File: p.File}, "stages"
}

// crossing is the offset at which a count moving linearly from a (at ta)
// to b (at tb) reaches x, rounded up to the nanosecond, for x strictly
// between a and b or equal to one of them (a jump, tb == ta, gives ta).
func crossing(ta, tb time.Duration, a, b, x int) time.Duration {
	num, den := x-a, b-a
	if den < 0 {
		num, den = -num, -den
	}
	hi, lo := bits.Mul64(uint64(tb-ta), uint64(num))
	lo, c := bits.Add64(lo, uint64(den-1), 0)
	hi += c
	q, _ := bits.Div64(hi, lo, uint64(den)) // num ≤ den: the quotient fits
	return ta + time.Duration(q)
}

// newStageSessions is group name's timetable over the stages (count
// clients, the stages starting at offset start, publishing ending at end):
// client j's windows where the connected count is below j+1. A leave at or
// after end does not happen; a window without a return ends at
// math.MaxInt64.
func newStageSessions(stages []Stage, name string, count int, start, end time.Duration) *Sessions {
	s := &Sessions{End: end, Clients: count, Staged: true}
	d := &drawnSessions{off: make([]int, count+1)}
	for j := 0; j < count; j++ {
		x := j + 1
		present := true
		ta, a := start, count
		for _, st := range stages {
			tb, b := satAdd(ta, st.Duration), a
			if n, ok := st.Clients[name]; ok {
				b = n
			}
			switch {
			case present && b < x: // leaves when the count falls below x
				t := ta
				if a > x {
					t = crossing(ta, tb, a, b, x)
				}
				if t < end {
					d.at = append(d.at, t)
					d.back = append(d.back, math.MaxInt64)
					present = false
				}
			case !present && b >= x: // returns when the count reaches x
				d.back[len(d.back)-1] = crossing(ta, tb, a, b, x)
				present = true
			}
			ta, a = tb, b
		}
		d.off[j+1] = len(d.at)
	}
	s.drawn = d
	return s
}

// LongestAway is the longest time a client of the group is away and comes
// back (a window without a return is not counted: nothing waits for it).
func (s *Sessions) LongestAway() time.Duration {
	var longest time.Duration
	for j := 0; j < s.Clients; j++ {
		for k := 0; k < s.Disconnects(j); k++ {
			if b := s.BackAt(j, k); b != math.MaxInt64 {
				longest = max(longest, b-s.DisconnectAt(j, k))
			}
		}
	}
	return longest
}

// Returns is how many of the group's leaves are followed by a return
// (every one but the windows that last to the end).
func (s *Sessions) Returns() int {
	if !s.windowed() {
		return s.Total()
	}
	n := 0
	for _, b := range s.drawn.back {
		if b != math.MaxInt64 {
			n++
		}
	}
	return n
}

// stagesMove reports whether a stage gives group name's clients.
func stagesMove(stages []Stage, name string) bool {
	for _, st := range stages {
		if _, ok := st.Clients[name]; ok {
			return true
		}
	}
	return false
}

// Churns reports whether group g's clients leave and come back as planned
// (lifetime, churn or a stage's clients), so that its churn.* metrics are
// measured.
func (p *Plan) Churns(g *Group) bool {
	return g.Churn != nil || stagesMove(p.Stages, g.Name)
}
