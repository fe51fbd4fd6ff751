package runner

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/plans"
)

// client is one running MQTT client.
type client struct {
	plan *plans.Client
	// live is the client's current connection: nil until it first
	// connects, replaced when it reconnects.
	live atomic.Pointer[mqttc.Conn]
	// target, opts and handlers are what connecting takes, kept for
	// reconnects.
	target   mqttc.Target
	opts     mqttc.Options
	handlers mqttc.Handlers
	// reconnected is signalled when a dropped client is connected again,
	// or when it gave up (gaveUp).
	reconnected chan struct{}
	gaveUp      atomic.Bool
	ready       atomic.Bool // connected and not yet lost
	// closing is set before mqplan disconnects on purpose, so that the
	// resulting connection close is not counted as a disconnect.
	closing atomic.Bool
	lost    atomic.Bool
	// subscribed is set once the broker granted one of its subscriptions.
	subscribed atomic.Bool
	// lostPhase is the phase of the client's last connection loss.
	lostPhase atomic.Uint32
	// next is the index in the schedule of the first message the
	// publisher did not get to (sent or failed), written by its publish
	// goroutine and read when publishing is over: the messages from there
	// up to when publishing stopped were due and never sent.
	next int
	// abandoned holds the tokens (see sentAs) of the QoS 1/2 messages
	// that a dropped connection left unacknowledged and that no resumed
	// session sent again, so that the deliveries they cost count as lost
	// before acknowledgement, not as the broker's loss. It grows per
	// connection loss, never per message.
	abandoned []mqttc.Token
	// publishing is set while the client's publish goroutine runs.
	publishing atomic.Bool
	// quit is 1 + next once the publisher will never send again while
	// publishing goes on (its connection lost for good, or never made),
	// 0 before: the messages from next on that fall due are skipped, and
	// the snapshots count them as unsent while the run goes.
	quit atomic.Int64
	// unsentTo is the offset (from the start of warmup) up to which the
	// messages this publisher skipped have been counted as unsent (see
	// run.countSkipped); guarded by run.unsentMu.
	unsentTo time.Duration
	// wake is signalled by the pacer when a message of this publisher
	// falls due (capacity 1: signals never block the pacer).
	wake chan struct{}
	// cur holds a Poisson publisher's schedule cursors (cursors.go), nil
	// for every other client.
	cur *cursors
	// ps is an open-loop publisher's send state, shared with the pacer
	// when the pacer writes its messages (pacer_send.go); nil for other
	// clients.
	ps *pubState

	// Receive-side state, touched only by the connection's reader
	// goroutine (or under share.mu for a share group).
	streams map[uint32]*stream
	share   *shareState
	// expects says, for a share group member, whether its filters match
	// each publisher's topic (looked up once per publisher): a member
	// records into the group's streams, which have no room for it.
	expects    map[uint32]bool
	lastPub    uint32
	lastStream *stream
	recv       recvRecord
	// retainAsPublished: one of the client's subscriptions keeps the
	// publisher's retain flag, so the flag does not tell a replayed
	// retained message from a live delivery.
	retainAsPublished bool
	// clean is the state of a subscriber of a churning group with a
	// clean session, cleanPub the counters a publisher shows the clean
	// subscribers it reaches (clean_run.go); nil otherwise.
	clean    *cleanSub
	cleanPub *cleanPub
	// expected and expectedBy are a publisher's Expected and
	// ExpectedByGroup less its clean churning subscribers, whose
	// windows book their own expected deliveries (clean_run.go).
	expected   int64
	expectedBy []int
	// req is the client's request/response state, nil when it neither
	// requests nor responds (reqresp.go).
	req *reqState
}

// shareState is the delivery state of one $share group: the same
// (publisher, sequence) delivered to two members is a duplicate.
type shareState struct {
	mu      sync.Mutex
	streams map[uint32]*stream
}

// streamFor returns the stream state for publisher pub; it allocates only
// the first time a stream is seen.
func streamFor(m map[uint32]*stream, pub uint32) *stream {
	s := m[pub]
	if s == nil {
		s = &stream{}
		m[pub] = s
	}
	return s
}
