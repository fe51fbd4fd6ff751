package metric

// The request/response metrics (MQTT 5 response topic and correlation
// data): requests and the answers they imply, counted at the requesting
// group, and answers published, counted at the responding group.
const (
	// Requests counts requests sent (publishes with a response topic).
	Requests Name = "requests"
	// Responses counts first answers that came within the timeout.
	Responses Name = "responses"
	// ResponsesExpected counts the answers the requests sent imply.
	ResponsesExpected Name = "responses_expected"
	// ResponsesLate counts first answers that came after the timeout.
	ResponsesLate Name = "responses_late"
	// ResponsesDuplicates counts answers to a request received again.
	ResponsesDuplicates Name = "responses_duplicates"
	// ResponsesSent counts answers published by responders.
	ResponsesSent Name = "responses_sent"
	// RTTTimeouts counts expected answers that did not come in time.
	RTTTimeouts Name = "rtt.timeouts"
	// RTTMin is the least request round trip.
	RTTMin Name = "rtt.min"
	// RTTMean is the mean request round trip.
	RTTMean Name = "rtt.mean"
	// RTTP50 is the median request round trip.
	RTTP50 Name = "rtt.p50"
	// RTTP90 is the 90th percentile of request round trips.
	RTTP90 Name = "rtt.p90"
	// RTTP95 is the 95th percentile of request round trips.
	RTTP95 Name = "rtt.p95"
	// RTTP99 is the 99th percentile of request round trips.
	RTTP99 Name = "rtt.p99"
	// RTTP999 is the 99.9th percentile of request round trips.
	RTTP999 Name = "rtt.p999"
	// RTTMax is the greatest request round trip.
	RTTMax Name = "rtt.max"
	// RTTStddev is the standard deviation of request round trips.
	RTTStddev Name = "rtt.stddev"
)

// rttHelp is the help of the round-trip family.
const rttHelp = "request round trip, the request's intended send time to its answer at the requester, "
