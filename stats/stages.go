package stats

import "time"

// StageStats is one stage of a plan's `stages:` timeline as a run
// measured it: the messages whose intended send time falls in the stage's
// window, wherever and whenever they arrived (so a stage's deliveries
// include those that arrived in the next stage or in drain). Metrics
// counts every delivery once, as a merged phase does: Expected, Received,
// Lost, Duplicates and Latency are the deliveries of the stage's
// messages; Sent, Unsent and Lag their publishes.
type StageStats struct {
	// Index is the stage's position in the plan; Name its name (its index
	// when unnamed).
	Index int
	Name  string
	// Start and End are the stage's planned window, offsets from the start
	// of warmup (End-Start is its duration, which its rates divide by).
	Start, End time.Duration
	Metrics    Metrics
}

// Duration is the stage's planned length.
func (s *StageStats) Duration() time.Duration { return s.End - s.Start }
