package plans

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Arrivals: how a publisher's messages are spread in time at a given rate
// (issue 10). `arrival: uniform` (the default) spaces them evenly, client j
// of a group of n offset by j/n of the interval. `arrival: poisson` makes
// them a Poisson process: exponential gaps in operational time u = N(t)
// (poisson.go), so over any window the count is Poisson with the
// profile's mean, and bursts and lulls happen as they do for independent
// devices. The arrivals are a pure function of (plan seed, client index,
// k): explain's counts are exact, a test can derive every send time, and
// two runs of a plan with the same seed send at the same offsets.

// Arrival values.
const (
	ArrivalUniform = "uniform"
	ArrivalPoisson = "poisson"
)

// DefaultSeed is the seed of a plan that gives none: runs repeat unless the
// plan (or --set seed=N) says otherwise.
const DefaultSeed = 1

// poissonCountUntil is countUntil for Poisson arrivals: the number of k
// whose intended time is before x (and before the end), capped by Count.
// Intended times never decrease with k, so it is the first k whose time is
// at or past the bound: found by a search over blocks of poissonBlock
// arrivals (each block's last arrival is its tree end, O(log j) draws),
// then a walk inside one block. O(log² k + poissonBlock) in all.
func (s Schedule) poissonCountUntil(x time.Duration) int {
	end := s.End()
	// reached(t): t is at or past the bound, compared as At and countUntil do.
	reached := func(t float64) bool {
		if x >= end {
			return t >= float64(end)
		}
		return t >= math.MaxInt64 || time.Duration(t) >= x
	}
	last := func(j uint64) float64 { return s.delayed(s.inverse(s.Arrivals.blockEnd(j + 1))) }
	// The first block whose last arrival is reached: double, then bisect.
	hi := uint64(1)
	for !reached(last(hi - 1)) {
		if hi >= maxScheduleMessages/poissonBlock {
			return s.capCount(maxScheduleMessages)
		}
		hi *= 2
	}
	lo := uint64(0) // blocks before lo are not reached; block hi-1 is
	for lo < hi-1 {
		mid := lo + (hi-1-lo)/2
		if reached(last(mid)) {
			hi = mid + 1
		} else {
			lo = mid + 1
		}
	}
	j := hi - 1
	c := s.Arrivals.cursor(j * poissonBlock)
	for i := uint64(0); i < poissonBlock; i++ {
		if reached(s.delayed(s.inverse(c.next()))) {
			return s.capCount(int(j*poissonBlock + i))
		}
	}
	return s.capCount(int(j*poissonBlock + poissonBlock - 1)) // the last is reached: not reached above only by rounding
}

func (s Schedule) capCount(n int) int {
	if s.Count > 0 {
		return min(n, s.Count)
	}
	return n
}

// arrival decodes `publish.arrival:` into pub.
func (l *loader) arrival(s *keySection, pub *Publish) {
	e, ok := s.get("arrival")
	if !ok {
		return
	}
	v, ok := l.value(e, "uniform or poisson")
	if !ok {
		return
	}
	switch v = strings.TrimSpace(v); v {
	case ArrivalUniform, ArrivalPoisson:
		if pub.Burst != nil {
			l.errorf(e.val, e.path, "not with burst: a burst's messages share one intended time")
			return
		}
		if pub.Max {
			l.errorf(e.val, e.path, "not with rate: max: a closed loop sends when its window allows, on no schedule to spread")
			return
		}
		pub.Arrival = v
	default:
		if hint := suggestKey(v, []string{ArrivalUniform, ArrivalPoisson}); hint != "" {
			l.errorf(e.val, e.path, "must be uniform or poisson, got %s (did you mean %q?)", gotValue(v), hint)
		} else {
			l.errorf(e.val, e.path, "must be uniform or poisson, got %s", gotValue(v))
		}
	}
}

// maxPoissonWork bounds poisson publishing clients × counted windows (the
// three publishing phases and each stage): counting one window of Poisson
// arrivals exactly costs about 12 µs (a search over blocks of the arrival
// tree and a walk in one), so that validate and explain of any plan stay
// within a few seconds.
const maxPoissonWork = 250_000

// checkPoissonWork refuses a plan whose exact Poisson counts would take too
// long (see maxPoissonWork).
func checkPoissonWork(p *Plan) Errors {
	clients, first := 0, -1
	for i, g := range p.Groups {
		if g.Publish != nil && g.Publish.Arrival == ArrivalPoisson {
			clients += g.Count
			if first < 0 {
				first = i
			}
		}
	}
	windows := int64(3 + len(p.Stages))
	if work := int64(clients) * windows; work > maxPoissonWork {
		return Errors{{Pos: p.Groups[first].Publish.Pos, Path: "groups[" + strconv.Itoa(first) + "].publish.arrival", Msg: fmt.Sprintf(
			"%s clients with poisson arrivals × %d windows counted exactly (3 phases and %d stages) is %s, more than the limit of %s",
			thousands(clients), windows, len(p.Stages), thousands64(work), thousands(maxPoissonWork))}}
	}
	return nil
}
