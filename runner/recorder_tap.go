package runner

import (
	"sync"
	"time"

	"github.com/mqplan/mqplan/phase"
)

// A recorder tap is test support for the merge property (issue 11): set
// on a recorder before a run, it keeps every record* call with its
// arguments and the timeline second it fell in, so that a test can
// replay one real run's events into several recorders, split by client
// as shards would record them, and check that the merge of their partial
// results equals the unsplit run. Unset (always, outside tests), it costs
// a nil check per record call and allocates nothing.

// tapKind names the recorder method a tapEvent replays.
type tapKind uint8

const (
	tapSend tapKind = iota
	tapUnsent
	tapLostUnacked
	tapMisjudgedCopies
	tapAck
	tapError
	tapReceive
	tapCorrupt
	tapForeign
	tapUnexpected
	tapConnEvent
	tapSubscribe
	tapStageUnsent
	tapStageLostUnacked
	tapStageMisjudgedCopies
	tapAnswerSent
	tapRequest
	tapAnswer
	tapClean
	tapAmbiguousReceived
	tapLostLate
	tapStageLostLate
)

// tapEvent is one record* call: its method, its arguments (the fields
// each method uses) and when it was recorded.
type tapEvent struct {
	kind tapKind
	// client is the recording client, -1 for the counts a run records
	// once, when it is over (into stripe 0).
	client int
	// second is how many timeline seconds the client's stripe had given
	// when the call was recorded: the call counts in second `second`.
	second     int64
	send       sendRecord
	recv       recvRecord
	ph         phase.Phase
	group      int
	other      int // the receiving group of tapLostUnacked and tapLostLate, the stage of stage calls
	n, size    int64
	expected   int64
	expectedBy []int
	d, d2      time.Duration
	flag       bool
	ev         event
}

// recorderTap collects the events of a tapped recorder.
type recorderTap struct {
	mu     sync.Mutex
	events []tapEvent
}

// add keeps e, stamped with st's seconds taken; st is locked (the call's
// stripe), so the stamp agrees with the second the call counts in.
func (t *recorderTap) add(st *stripe, e tapEvent) {
	e.second = st.taken
	t.mu.Lock()
	t.events = append(t.events, e)
	t.mu.Unlock()
}
