package live

import (
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Info names the run an exporter's series belong to, for
// mqplan_run_info and mqplan_build_info.
type Info struct {
	// RunID is the run_id label of every series: what tells two runs
	// scraped into one Prometheus apart.
	RunID string
	// Plan is the plan's file name; Broker the broker URL with its
	// secrets masked (plans.RedactURL): the caller masks it, since live
	// knows nothing of plans.
	Plan, Broker string
	// Version and Revision are mqplan's version and VCS revision ("" when
	// unknown); the Go release is the running binary's.
	Version, Revision string
	// Thresholds are the run's threshold expressions (the plan's and the
	// built-in checks), each a series of mqplan_threshold_passed from the
	// start: NaN until Finish judges them.
	Thresholds []string
}

// Final is what is known of a run only when it is over: the exporter
// serves it from Finish on.
type Final struct {
	// Unsent is each group's unsent messages over all phases, in the
	// order of New's groups.
	Unsent []int64
	// SentBytes and ReceivedBytes are each group's payload bytes
	// published and delivered, over all phases (as Unsent, by group).
	SentBytes, ReceivedBytes []int64
	// ConnectP50, ConnectP99 and ConnectMax are the run's connect
	// latency; all zero when no client connected.
	ConnectP50, ConnectP99, ConnectMax time.Duration
	// Thresholds are the run's thresholds, in the report's order.
	Thresholds []Threshold
}

// Threshold is one judged threshold: its expression as the plan wrote it
// (or a built-in check's) and whether it passed.
type Threshold struct {
	Expr string
	Pass bool
}

// Finish adds what is known only when the run is over (unsent, payload
// bytes, connect latency, threshold outcomes: counting bytes each second
// would add to every message's path); call it after the last Observe. f is
// copied.
func (x *Exporter) Finish(f Final) {
	x.mu.Lock()
	defer x.mu.Unlock()
	f.Thresholds = append([]Threshold(nil), f.Thresholds...)
	x.final = &f
	for _, t := range f.Thresholds {
		x.addThreshold(t.Expr)
	}
	for i := range x.state {
		if i < len(f.Unsent) {
			x.state[i].unsent = f.Unsent[i]
		}
		if i < len(f.SentBytes) {
			x.state[i].sentBytes = f.SentBytes[i]
		}
		if i < len(f.ReceivedBytes) {
			x.state[i].receivedBytes = f.ReceivedBytes[i]
		}
	}
}

// collectRun sends the families that are not one value per group: the
// run's connect latency, its thresholds, and the run and build info. x.mu
// is held.
func (x *Exporter) collectRun(ch chan<- prometheus.Metric, d *prometheus.Desc, name string) {
	switch name {
	case "mqplan_connect_latency_seconds":
		v := [3]float64{math.NaN(), math.NaN(), math.NaN()}
		if f := x.final; f != nil && f.ConnectMax > 0 {
			v = [3]float64{f.ConnectP50.Seconds(), f.ConnectP99.Seconds(), f.ConnectMax.Seconds()}
		}
		for i, stat := range []string{"p50", "p99", "max"} {
			emit(ch, d, prometheus.GaugeValue, v[i], stat)
		}
	case "mqplan_threshold_passed":
		for _, expr := range x.thresholds {
			v := math.NaN()
			if x.final != nil {
				v = 1
				for _, t := range x.final.Thresholds {
					// Two thresholds written alike are one series:
					// either failing fails it, as the verdict does.
					if t.Expr == expr && !t.Pass {
						v = 0
					}
				}
			}
			emit(ch, d, prometheus.GaugeValue, v, expr)
		}
	case "mqplan_run_info":
		emit(ch, d, prometheus.GaugeValue, 1, x.info.Plan, x.info.Broker)
	case "mqplan_build_info":
		emit(ch, d, prometheus.GaugeValue, 1, x.info.Version, runtime.Version(), x.info.Revision)
	}
}

// addThreshold adds expr to the threshold series unless it is one.
func (x *Exporter) addThreshold(expr string) {
	if !slices.Contains(x.thresholds, expr) {
		x.thresholds = append(x.thresholds, expr)
	}
}
