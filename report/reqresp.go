package report

import (
	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/stats"
)

// reqRespValue computes the request/response metrics of a scope; handled
// is false for any other metric. The counts exist only in a scope that
// requests or answers, so that a threshold on them over a plan without
// request/response fails for want of samples, never passes on a zero.
func reqRespValue(m *stats.Metrics, name metric.Name) (val any, ok, handled bool) {
	q := &m.ReqResp
	requesting := q.Requests > 0 || q.Expected > 0
	count := func(n int64, present bool) (any, bool, bool) {
		if !present {
			return nil, false, true
		}
		return n, true, true
	}
	switch name {
	case metric.Requests:
		return count(q.Requests, requesting)
	case metric.ResponsesExpected:
		return count(q.Expected, requesting)
	case metric.Responses:
		return count(q.Responses, requesting)
	case metric.ResponsesLate:
		return count(q.Late, requesting)
	case metric.ResponsesDuplicates:
		return count(q.Duplicates, requesting)
	case metric.RTTTimeouts:
		return count(q.Timeouts, requesting)
	case metric.ResponsesSent:
		return count(q.Sent, q.Sent > 0 || q.Failed > 0 || requesting)
	}
	if family, stat, ok := name.Split(); ok && family == "rtt" {
		v, ok := histStat(q.RTT, stat)
		return v, ok, true
	}
	return nil, false, false
}
