package plans

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/internal/suggest"
)

// Knob is the one plan value mqplan find-max varies: a group's total
// publish rate or its client count. It lives with the plan language
// because a knob is a plan path, checked against the plan, and applied as
// a --set override, so that every trial's plan is loaded and validated
// (limits included) exactly as a plan written with that value would be.
type Knob struct {
	// Group is the group's name; Index its place in the plan.
	Group string
	Index int
	// Count: the knob is the group's client count; otherwise its total
	// publish rate in messages per second.
	Count bool
}

// knobProps are the properties a knob may name, for "did you mean".
var knobProps = []string{"rate", "count"}

// ParseKnob reads a knob as written on the command line,
// groups.<name>.rate or groups.<name>.count; "" is the rate of the plan's
// first publishing group. A rate knob on a group whose publishers stop
// after publish.count messages is refused: a higher rate would then
// shorten the load rather than raise it.
func ParseKnob(s string, p *Plan) (Knob, error) {
	if s == "" {
		for i, g := range p.Groups {
			if g.Publish != nil {
				return checkKnob(Knob{Group: g.Name, Index: i}, p)
			}
		}
		return Knob{}, fmt.Errorf("the plan has no publishing group, so there is no rate to search: name a knob, like groups.<name>.count")
	}
	rest, ok := strings.CutPrefix(s, "groups.")
	dot := strings.LastIndexByte(rest, '.')
	if !ok || dot <= 0 {
		return Knob{}, fmt.Errorf("%q: want groups.<name>.rate or groups.<name>.count", s)
	}
	name, prop := rest[:dot], rest[dot+1:]
	k := Knob{Group: name, Index: -1}
	var names []string
	for i, g := range p.Groups {
		names = append(names, g.Name)
		if g.Name == name && k.Index < 0 {
			k.Index = i
		}
	}
	if k.Index < 0 {
		msg := fmt.Sprintf("%q: no group named %q (groups: %s)", s, name, strings.Join(names, ", "))
		if near := suggest.Closest(name, names, suggest.Limit(name, 3), suggest.First); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
		return Knob{}, fmt.Errorf("%s", msg)
	}
	switch prop {
	case "rate":
	case "count", "clients":
		k.Count = true
	default:
		msg := fmt.Sprintf("%q: a knob is a group's rate or count, not %q", s, prop)
		if near := suggest.Closest(prop, knobProps, suggest.Limit(prop, 2), suggest.First); near != "" {
			msg += fmt.Sprintf("; did you mean groups.%s.%s?", name, near)
		}
		return Knob{}, fmt.Errorf("%s", msg)
	}
	return checkKnob(k, p)
}

func checkKnob(k Knob, p *Plan) (Knob, error) {
	g := p.Groups[k.Index]
	if k.Count {
		return k, nil
	}
	switch {
	case g.Publish == nil:
		return Knob{}, fmt.Errorf("%s: group %q does not publish, so it has no rate", k, g.Name)
	case g.Publish.Max:
		return Knob{}, fmt.Errorf("%s: group %q publishes with rate: max (a closed loop, as fast as its window allows), so it has no rate to search: search groups.%s.count, or give it a rate", k, g.Name, g.Name)
	case g.Publish.Count > 0:
		return Knob{}, fmt.Errorf("%s: group %q stops after publish.count %d messages a client, so a higher rate would end its load sooner rather than raise it: drop the count (--set groups.%s.publish.count=0)", k, g.Name, g.Publish.Count, g.Name)
	}
	return k, nil
}

// String is the knob as the command line writes it.
func (k Knob) String() string {
	if k.Count {
		return "groups." + k.Group + ".count"
	}
	return "groups." + k.Group + ".rate"
}

// Unit is what the knob's values count: "msg/s" or "clients".
func (k Knob) Unit() string {
	if k.Count {
		return "clients"
	}
	return "msg/s"
}

// Value is the knob's value in p: the group's count, or its total rate
// (a group written with every publishes count/every messages a second).
func (k Knob) Value(p *Plan) float64 {
	g := p.Groups[k.Index]
	if k.Count {
		return float64(g.Count)
	}
	if g.Publish.Rate > 0 {
		return g.Publish.Rate
	}
	return float64(g.Count) * float64(time.Second) / float64(g.Publish.Every)
}

// Sets are the --set overrides that give p's group the value v. A rate
// on a group written with `rate` sets it; one written with `every` keeps
// its form, its interval set to count/v (to the nanosecond), so that the
// plan reads as the user wrote it. A count is rounded down to whole
// clients.
func (k Knob) Sets(p *Plan, v float64) []string {
	g := p.Groups[k.Index]
	prefix := fmt.Sprintf("groups[%d].", k.Index)
	switch {
	case k.Count:
		return []string{prefix + "count=" + strconv.FormatInt(toInt64(math.Floor(v)), 10)}
	case g.Publish.Rate > 0:
		return []string{prefix + "publish.rate=" + strconv.FormatFloat(v, 'f', -1, 64) + "/s"}
	}
	every := toInt64(math.Round(float64(g.Count) * float64(time.Second) / v))
	return []string{prefix + "publish.every=" + strconv.FormatInt(max(every, 1), 10) + "ns"}
}

// toInt64 converts f, saturating at the int64 range: Go's conversion of a
// float beyond it is implementation-defined (math.MinInt64 on amd64), which
// turned a tiny rate into every=1ns and a huge count into a negative one.
func toInt64(f float64) int64 {
	switch {
	case f >= math.MaxInt64: // 2^63 as a float64
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}
