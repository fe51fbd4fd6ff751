package runner

import "github.com/mqplan/mqplan/phase"

// streamWindow is how many sequences behind the highest one a stream can
// still classify exactly as duplicate or late first delivery. Anything
// older is counted as out of order (it cannot be told from a duplicate
// without unbounded memory, and a broker that delays a message by 256
// sequences has an ordering problem worth reporting either way).
const streamWindow = 256

// stream is the delivery state of one publisher→subscriber stream (or
// publisher→share group): the highest sequence seen and a bitmap of the
// window below it, and when it last delivered. A few dozen bytes a
// stream, so per-stream state stays compact however many publishers a
// wildcard subscriber hears.
type stream struct {
	highest uint32
	// lastAt is when the stream's last delivery arrived (ns since the
	// run's epoch): a stream that delivered in drain's last second was
	// still delivering, and the messages above its highest were late
	// (settleLate in late.go).
	lastAt int64
	// seen bit i set means sequence highest-1-i has been received.
	seen [streamWindow / 64]uint64
	// extra is how many copies of one message beyond the first the
	// broker may send because several of the subscriber's filters match
	// the publisher's topic (MQTT 3.1.1 allows a copy per subscription;
	// NATS and ejabberd send them). firsts counts first deliveries and
	// copies the repeats taken as such copies, at most extra per message.
	extra          uint8
	firsts, copies uint32
	// copiesBy splits copies by the messages' publishing phase (warmup,
	// ramp, steady), so that settle can count them again as duplicates
	// where they were not overlap copies after all (see classify).
	copiesBy [3]uint32
	// copiesByStage splits them by the messages' stage (index), so that
	// settle counts them again in their stage's cell too; nil until a
	// copy of a message intended in a stage.
	copiesByStage []uint32
	// unexpected: none of the subscriber's filters matches the
	// publisher's topic, so the plan implies no delivery on this stream
	// and none is counted as received (see stats.Metrics.Unexpected).
	unexpected bool
	// peer is 1 + the publisher's index in a clean subscriber's peers
	// (clean_run.go), 0 for any other stream.
	peer int32
}

// delivery classifies one delivery of sequence seq (1-based).
type delivery uint8

const (
	deliveryFirst      delivery = iota // first time, in order
	deliveryOutOfOrder                 // first time, but after a higher sequence
	deliveryDuplicate                  // seen before
	deliveryOverlap                    // seen before, a copy for another matching subscription
	deliveryUnexpected                 // to a client none of whose filters matches the topic
)

// observe records seq and classifies it.
func (s *stream) observe(seq uint32) delivery {
	switch {
	case seq > s.highest:
		s.shift(seq - s.highest)
		s.highest = seq
		return deliveryFirst
	case seq == s.highest:
		return deliveryDuplicate
	}
	d := s.highest - seq - 1 // bit index
	if d >= streamWindow {
		return deliveryOutOfOrder
	}
	w, b := d/64, d%64
	if s.seen[w]&(1<<b) != 0 {
		return deliveryDuplicate
	}
	s.seen[w] |= 1 << b
	return deliveryOutOfOrder
}

// shift moves the window up by n sequences, marking the old highest as
// seen (when there was one).
func (s *stream) shift(n uint32) {
	if n >= streamWindow {
		s.seen = [streamWindow / 64]uint64{}
		if n == streamWindow && s.highest > 0 {
			s.seen[streamWindow/64-1] = 1 << 63
		}
		return
	}
	// Shift the multi-word bitmap left by n bits (towards older).
	words, bits := int(n/64), n%64
	const nw = streamWindow / 64
	for i := nw - 1; i >= 0; i-- {
		var v uint64
		if j := i - words; j >= 0 {
			v = s.seen[j] << bits
			if bits > 0 && j-1 >= 0 {
				v |= s.seen[j-1] >> (64 - bits)
			}
		}
		s.seen[i] = v
	}
	if s.highest > 0 {
		d := n - 1 // the old highest is now n-1 below the new one
		s.seen[d/64] |= 1 << (d % 64)
	}
}

// has reports whether seq has been received on the stream. A sequence
// older than the window is unknown and reported as not received.
func (s *stream) has(seq uint32) bool {
	switch {
	case seq == 0 || seq > s.highest:
		return false
	case seq == s.highest:
		return true
	}
	d := s.highest - seq - 1
	if d >= streamWindow {
		return false
	}
	return s.seen[d/64]&(1<<(d%64)) != 0
}

// classify turns observe's verdict into the delivery's kind, telling a
// repeat that is a copy for an overlapping subscription (while the stream
// has had fewer such copies than extra per first delivery) from a real
// duplicate. phase is the message's publishing phase.
//
// A repeat cannot be told from a copy one delivery at a time. The stream
// as a whole can: a broker that sends a copy per subscription sends one
// for (nearly) every message, one that sends one copy per client sends
// none, and its repeats are duplicates. So the copies are provisional and
// settle counts them as duplicates after all on a stream where fewer than
// half the messages came with their copies (misjudged).
// inStage is 1 + the index of the message's stage, 0 when in none.
func (s *stream) classify(kind delivery, ph phase.Phase, inStage int) delivery {
	if kind != deliveryDuplicate {
		s.firsts++
		return kind
	}
	if s.extra > 0 && uint64(s.copies) < uint64(s.extra)*uint64(s.firsts) {
		s.copies++
		if i := int(ph) - int(phase.Warmup); i >= 0 && i < len(s.copiesBy) {
			s.copiesBy[i]++
		}
		if inStage > 0 {
			for len(s.copiesByStage) < inStage {
				s.copiesByStage = append(s.copiesByStage, 0)
			}
			s.copiesByStage[inStage-1]++
		}
		return deliveryOverlap
	}
	return kind
}

// misjudged reports whether the stream's overlap copies were in fact a
// one-copy-per-client broker's duplicates: fewer than half the copies
// that a copy per subscription would have brought.
func (s *stream) misjudged() bool {
	return s.copies > 0 && 2*uint64(s.copies) < uint64(s.extra)*uint64(s.firsts)
}
