// Package phase names the stages of a run's timeline. A plan compiles into
// these phases, the runner records every event into the one it happened
// in, and thresholds and reports reach them by name (phases.steady.p99).
// It is the single encoding of the timeline: an index, a name and an order
// that every other package shares. It owns nothing else and imports
// nothing of mqplan.
package phase

// Phase is one stage of a run, in timeline order: its value indexes
// per-phase arrays, so the constants must stay dense and ordered.
type Phase uint8

// The phases in timeline order. Connect covers both connect stages
// (subscribers first, then publishers); warmup, ramp and steady are the
// publishing phases; drain only collects deliveries still in flight.
const (
	Connect Phase = iota
	Subscribe
	Warmup
	Ramp
	Steady
	Drain
	Disconnect
)

// Count is the number of phases, the length of every per-phase array.
const Count = int(Disconnect) + 1

// All lists every phase in timeline order.
var All = [Count]Phase{Connect, Subscribe, Warmup, Ramp, Steady, Drain, Disconnect}

// names are the public names: plan-format.md documents them, thresholds
// and the JSON report use them, so they never change.
var names = [Count]string{"connect", "subscribe", "warmup", "ramp", "steady", "drain", "disconnect"}

// String returns the phase's public name, or "phase(N)" for a value out
// of range (never produced by this package).
func (p Phase) String() string {
	if int(p) < Count {
		return names[p]
	}
	return "phase(" + itoa(int(p)) + ")"
}

// Publishing reports whether the schedule sends messages in p (warmup,
// ramp and steady).
func (p Phase) Publishing() bool { return p >= Warmup && p <= Steady }

// Parse finds a phase by its public name.
func Parse(name string) (Phase, bool) {
	for i, n := range names {
		if n == name {
			return Phase(i), true
		}
	}
	return 0, false
}

// Names lists the public names in timeline order, for messages that
// enumerate them and for name suggestions.
func Names() []string { return append([]string(nil), names[:]...) }

// itoa formats small non-negative ints without importing strconv into a
// package every other one imports.
func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
