package plans

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// The bounds on the work a plan implies. A plan file is at most 4 MiB, but
// a few of its lines can ask for a million clients with twenty thousand
// filters each; validate, explain and Compile expand every client, so the
// plan is refused before that work starts, with a message naming the
// product that is too large and the limit. Each limit is far beyond what
// this tool drives from one machine (about 20,000 connections per process,
// more with source addresses), and together they keep Load plus Compile of
// any plan under 512 MiB of allocation and a few seconds (the size-budget
// test and BenchmarkCompileLimits check this).
const (
	// maxPlanClients bounds the clients of a plan, all groups together.
	maxPlanClients = 500_000
	// maxPlanSubscriptions bounds clients × filters, all groups together:
	// each subscription is expanded and indexed at compile time.
	maxPlanSubscriptions = 800_000
	// maxPlanText bounds the bytes of client ids, user names, topics,
	// filters and will topics that expanding every client produces.
	maxPlanText = 64 << 20
	// maxTemplateBytes is the longest expansion of one id, user name,
	// topic or filter: the MQTT string limit.
	maxTemplateBytes = 65535
	// maxTimeline bounds warmup + ramp + duration + drain, a publish
	// interval, a count-sized steady phase and a connection ramp: longer
	// than any soak test, and far from time.Duration's 292 years, so that
	// no sum of phases can overflow.
	maxTimeline = 366 * 24 * time.Hour
	// maxRandomDisconnects bounds the disconnects of the groups with a
	// random lifetime (lifetime: {min, max}), all together, counted with
	// the shortest lifetime: their timetable is drawn at compile time and
	// kept, 8 bytes a disconnect (sessions_random.go).
	maxRandomDisconnects = 1_000_000
)

// maxDigits is the longest %i: a client number is at most
// maxGroupStart+maxGroupCount, which has 10 digits.
const maxDigits = 10

// maxLen is the longest expansion of t, given the longest client id and
// user name; it saturates rather than overflows.
func (t Template) maxLen(idLen, userLen int) int {
	n := 0
	for _, p := range t.parts {
		var k int
		switch p.verb {
		case 0:
			k = len(p.lit)
		case 'c':
			k = idLen
		case 'u':
			k = userLen
		case 'i':
			k = maxDigits
		}
		if n > math.MaxInt-k {
			return math.MaxInt
		}
		n += k
	}
	return n
}

// groupTemplateLens is the longest user name and client id of a group, and
// the longest expansion of its topics, filters and will topic together.
func groupTemplateLens(g *Group) (user, id, rest int) {
	user = g.Username.maxLen(0, 0)
	id = g.ClientID.maxLen(0, user)
	if g.ClientID.IsZero() {
		id = len("mqplan--") + 8 + len(g.Name) + maxDigits // the default id with a run id
	}
	add := func(t Template) {
		k := t.maxLen(id, user)
		if rest > math.MaxInt-k {
			rest = math.MaxInt
			return
		}
		rest += k
	}
	if g.Publish != nil {
		add(g.Publish.Topic)
	}
	for _, s := range g.Subscribe {
		add(s.Topic)
	}
	if g.Will != nil {
		add(g.Will.Topic)
	}
	return user, id, rest
}

// checkWork refuses a plan whose expansion would exceed the limits above.
// Each problem is reported once, at the group that crosses the limit.
func checkWork(p *Plan) Errors {
	var errs Errors
	clients, subs, text := 0, 0, 0
	overClients, overSubs, overText := false, false, false
	for i := range p.Groups {
		g := &p.Groups[i]
		path := "groups[" + strconv.Itoa(i) + "]"
		clients += g.Count
		if clients > maxPlanClients && !overClients {
			overClients = true
			errs = append(errs, &Error{Pos: g.Pos, Path: path, Msg: fmt.Sprintf(
				"the plan has %s clients (count summed over groups up to this one), more than the limit of %s in one plan",
				thousands(clients), thousands(maxPlanClients))})
		}
		n := g.Count * len(g.Subscribe) // ≤ 10⁶ × 4·10⁶: no overflow
		subs += n
		if subs > maxPlanSubscriptions && !overSubs {
			overSubs = true
			errs = append(errs, &Error{Pos: g.Pos, Path: path, Msg: fmt.Sprintf(
				"%s clients × %s filters = %s subscriptions (%s in the plan up to this group), more than the limit of %s in one plan",
				thousands(g.Count), thousands(len(g.Subscribe)), thousands(n), thousands(subs), thousands(maxPlanSubscriptions))})
		}
		user, id, rest := groupTemplateLens(g)
		per := min(user+id+rest, math.MaxInt/maxPlanClients) // saturate: the product must not wrap
		if !overText {
			text += g.Count * per
		}
		if text > maxPlanText && !overText {
			overText = true
			errs = append(errs, &Error{Pos: g.Pos, Path: path, Msg: fmt.Sprintf(
				"%s clients × up to %s bytes of client id, username, topics and filters each = %s bytes, more than the limit of %s bytes (64 MiB) in one plan",
				thousands(g.Count), thousands(per), thousands(text), thousands(maxPlanText))})
		}
	}
	errs = append(errs, checkStageWork(p)...)
	return append(errs, checkPoissonWork(p)...)
}

// thousands formats n with commas, for limits a reader must compare.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := ""
	if n < 0 {
		neg, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return neg + s
}

// checkTimeline refuses timelines that cannot be computed safely: phases
// summing past maxTimeline (a sum past 292 years would wrap
// time.Duration), a publish interval or a count-sized steady phase longer
// than that, or a connection ramp as long. keyPos gives the position of a
// top-level key (warmup, ramp, duration, drain), or the plan's position.
func checkTimeline(p *Plan, keyPos func(key string) Pos) Errors {
	var errs Errors
	var sum time.Duration
	for _, ph := range []struct {
		key string
		d   time.Duration
	}{{"warmup", p.Warmup}, {"ramp", p.Ramp}, {"duration", p.Duration}, {"drain", p.Drain}} {
		before := sum
		sum = satAdd(sum, max(ph.d, 0))
		if sum > maxTimeline && before <= maxTimeline {
			errs = append(errs, &Error{Pos: keyPos(ph.key), Path: ph.key, Msg: fmt.Sprintf(
				"warmup + ramp + duration + drain reaches %s here, more than the limit of %s (366 days)",
				fmtLongDuration(sum), fmtLongDuration(maxTimeline))})
		}
	}
	for i := range p.Groups {
		g := &p.Groups[i]
		path := "groups[" + strconv.Itoa(i) + "]"
		if span := float64(g.Count-1) / g.ConnectRate; g.ConnectRate > 0 && span > maxTimeline.Seconds() {
			errs = append(errs, &Error{Pos: g.Pos, Path: path + ".connect_rate", Msg: fmt.Sprintf(
				"connecting %s clients at this rate takes %s, longer than the limit of %s (366 days)",
				thousands(g.Count), fmtLongDuration(time.Duration(min(span, 9e9)*float64(time.Second))), fmtLongDuration(maxTimeline))})
		}
		pub := g.Publish
		if pub == nil {
			continue
		}
		iv := pub.Interval(g.Count)
		switch {
		case iv > maxTimeline || iv < 0:
			errs = append(errs, &Error{Pos: pub.Pos, Path: path + ".publish", Msg: fmt.Sprintf(
				"each client publishes once every %s, longer than the limit of %s (366 days)",
				fmtLongDuration(iv), fmtLongDuration(maxTimeline))})
		case p.Duration == 0 && pub.Count > 0 && iv > 0 &&
			float64(pub.Count)*float64(iv)+float64(p.Warmup)+float64(p.Ramp) > float64(maxTimeline):
			// Without a duration the steady phase is sized by the counts.
			errs = append(errs, &Error{Pos: pub.Pos, Path: path + ".publish.count", Msg: fmt.Sprintf(
				"%s messages × one every %s take longer than the limit of %s (366 days)",
				thousands(pub.Count), fmtLongDuration(iv), fmtLongDuration(maxTimeline))})
		}
	}
	return errs
}

// fmtLongDuration writes d in hours past a day (8784h, not 366d, which Go
// durations cannot parse back).
func fmtLongDuration(d time.Duration) string {
	if d == math.MaxInt64 {
		return "more than 292 years"
	}
	return d.String()
}
