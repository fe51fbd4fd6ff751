package stats

import "github.com/HdrHistogram/hdrhistogram-go"

// ReqResp is what a scope measured of MQTT 5 request/response: the
// requests a requesting group sent and what became of the answers they
// implied, and the answers a responder group sent. Every expected answer
// ends as exactly one of: on time (Responses), late (Late: it came, after
// the timeout) or missing (Timeouts − Late): a lost request, a responder
// that did not answer, an answer the broker lost.
type ReqResp struct {
	// Requests counts requests sent; Expected the answers they imply (one
	// per responder each is delivered to).
	Requests, Expected int64
	// Responses counts first answers within the timeout, Late first
	// answers after it, Duplicates answers received again.
	Responses, Late, Duplicates int64
	// Timeouts is Expected minus Responses, fixed when the run ends: the
	// answers that did not come in time, late ones included.
	Timeouts int64
	// Sent counts the answers a responder group published, Failed those
	// it could not (its connection was gone).
	Sent, Failed int64
	// RTT is the request's intended send time → its answer's arrival at
	// the requester, in microseconds, for every first answer (late ones
	// included, so that rtt.max shows how late); nil when none came.
	RTT *hdrhistogram.Histogram
}

// Merge adds o into q. The histogram is merged, never shared.
func (q *ReqResp) Merge(o *ReqResp) {
	q.Requests += o.Requests
	q.Expected += o.Expected
	q.Responses += o.Responses
	q.Late += o.Late
	q.Duplicates += o.Duplicates
	q.Timeouts += o.Timeouts
	q.Sent += o.Sent
	q.Failed += o.Failed
	q.RTT = mergeHist(q.RTT, o.RTT)
}
