package plans

import (
	"math"
	"time"

	"go.yaml.in/yaml/v3"
)

// Bursts: devices that report together (issue 10). A group with
// `publish.burst: {every: 10s, messages: 500}` sends 500 messages every
// 10 s, all intended at the same instant: burst b at b·every from the start
// of warmup, while publishing lasts. The messages of a burst are spread
// over the group's clients round-robin, the same way every burst: client j
// (0-based) of n sends messages/n of each burst, one more when j <
// messages mod n. Latency is measured from the burst's instant, so the
// time a broker takes to absorb a burst shows in the percentiles and the
// lag. A burst schedule ignores the ramp (bursts do not grow) and is not
// allowed with stages.

// Burst is a group's `publish.burst:`.
type Burst struct {
	// Every is the time between two bursts.
	Every time.Duration `json:"every"`
	// Messages is how many messages the whole group sends in each burst.
	Messages int `json:"messages"`
}

// maxBurstMessages bounds a burst: each is sent at once.
const maxBurstMessages = 1_000_000

// share is client j's messages in each burst of a group of n clients.
func (b *Burst) share(j, n int) int {
	if n <= 0 {
		return 0
	}
	m := b.Messages / n
	if j < b.Messages%n {
		m++
	}
	return m
}

// burstAt is At for a burst schedule: message k is in burst k/BurstSize.
func (s Schedule) burstAt(k int) (time.Duration, bool) {
	if s.BurstSize <= 0 {
		return 0, false
	}
	b := int64(k / s.BurstSize)
	end := int64(s.End())
	if end <= 0 || b > (end-1)/int64(s.Burst) {
		return 0, false
	}
	return time.Duration(b) * s.Burst, true
}

// burstCountUntil is the number of messages intended before x: whole
// bursts, those starting before x and before the end, capped by Count.
func (s Schedule) burstCountUntil(x time.Duration) int {
	lim := min(x, s.End())
	if s.BurstSize <= 0 || lim <= 0 {
		return 0
	}
	bursts := (int64(lim)-1)/int64(s.Burst) + 1
	n := maxScheduleMessages
	if bursts <= int64(maxScheduleMessages/s.BurstSize) {
		n = int(bursts) * s.BurstSize
	}
	if s.Count > 0 {
		n = min(n, s.Count)
	}
	return n
}

// burstLastAt is the intended time of message Count-1 (LastAt), saturating.
func (s Schedule) burstLastAt() time.Duration {
	if s.BurstSize <= 0 {
		return math.MaxInt64
	}
	b := int64((s.Count - 1) / s.BurstSize)
	if b > math.MaxInt64/int64(s.Burst) {
		return math.MaxInt64
	}
	return time.Duration(b) * s.Burst
}

// burst decodes `publish.burst:`; nil when it does not decode.
func (l *loader) burst(e keyEntry) *Burst {
	if e.val.Kind != yaml.MappingNode {
		l.errorf(e.val, e.path, "must be a mapping like {every: 10s, messages: 500}, got %s", describeNode(e.val))
		return nil
	}
	s := l.section(e.path, e.val, burstKeys, false)
	b := &Burst{}
	ok := true
	if !s.duration("every", &b.Every, durationOpts{positive: true, max: maxTimeline}) {
		l.errorf(e.val, e.path, "missing \"every\": say how often the group bursts, like every: 10s")
		ok = false
	}
	if !s.integer("messages", &b.Messages, 1, maxBurstMessages) {
		l.errorf(e.val, e.path, "missing \"messages\": say how many messages the group sends in each burst, like messages: 500")
		ok = false
	}
	if !ok || b.Every <= 0 || b.Messages <= 0 {
		return nil
	}
	return b
}
