package runner

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/procstat"
	"github.com/mqplan/mqplan/stats"
)

// procSamplers read the broker's (when the plan's broker.metrics names
// one) and mqplan's own CPU and memory once a second, on the snapshot
// goroutine: never on a client's.
type procSamplers struct {
	broker, self *procstat.Sampler
	// wait reads mqplan's threads' run-queue wait and the machine's CPU
	// pressure (nil where there is no schedstat).
	wait *procstat.SelfWait
	// brokerGone says when and why the broker process was found gone
	// (Stats.BrokerGone), "" while it runs or when none is watched.
	brokerGone string
}

// newProcSamplers finds the broker process the plan names. A broker
// process that cannot be found or read is an error the run reports as
// incomplete before anything connects: thresholds on broker.* would
// otherwise fail after a whole run, for a reason known at its start.
// mqplan's own sampler is best effort (absent where there is no /proc).
func newProcSamplers(m *plans.BrokerMetrics) (procSamplers, error) {
	var ps procSamplers
	if self, err := procstat.New(0); err == nil {
		ps.self = self
	}
	if w, err := procstat.NewSelfWait(); err == nil {
		ps.wait = w
	}
	if !m.HasProcess() {
		return ps, nil
	}
	pid := m.PID
	if m.Process != "" {
		p, err := procstat.FindProcess(m.Process)
		if err != nil {
			return ps, fmt.Errorf("broker.metrics: %w", err)
		}
		pid = p
	}
	b, err := procstat.New(pid)
	if err != nil {
		return ps, fmt.Errorf("broker.metrics: pid %d: %w", pid, err)
	}
	ps.broker = b
	return ps, nil
}

// sampleProcs reads both processes into s. A process that can no longer
// be read (the broker exited, or is a zombie) is not read again, and the
// run says so once, at the second it was found gone.
//
// A second shorter than procstat.MinCPUWindow (the run's last, partial
// second; a snapshot that ran late) has no CPU figure worth the name: it
// is left unsampled, its RSS too, since a second of the timeline carries
// both or neither (the report's CPU mean and maximum, RSS maximum and
// sampled seconds count the same seconds). Its CPU time is not lost: it
// counts in the next second's figure, when there is one.
func (r *run) sampleProcs(s *stats.Second) {
	read := func(sp **procstat.Sampler, what string) stats.ProcSample {
		if *sp == nil {
			return stats.ProcSample{}
		}
		v, err := (*sp).Sample()
		if err != nil {
			if sp == &r.procs.broker && errors.Is(err, procstat.ErrGone) {
				r.procs.brokerGone = fmt.Sprintf("the broker process exited (found gone at %s: %v)", s.At.Round(1e9), err)
			}
			r.note(fmt.Sprintf("%s metrics stopped at %s: %v", what, s.At.Round(1e9), err))
			*sp = nil
			return stats.ProcSample{}
		}
		if !v.HasCPU {
			return stats.ProcSample{}
		}
		return stats.ProcSample{Sampled: true, CPU: v.CPU, RSS: v.RSS}
	}
	s.Broker = read(&r.procs.broker, "broker")
	s.Self = read(&r.procs.self, "mqplan")
	r.sampleGen(s)
}

// sampleGen reads how disturbed mqplan itself was during the second. It
// is read only in a second with a CPU figure, so that the wait covers the
// same window as the CPU (a short window's wait counts in the next).
func (r *run) sampleGen(s *stats.Second) {
	if r.procs.wait == nil || !s.Self.Sampled {
		return
	}
	w, err := r.procs.wait.Sample()
	if err != nil {
		r.note(fmt.Sprintf("mqplan's CPU wait stopped being read at %s: %v", s.At.Round(1e9), err))
		r.procs.wait = nil
		return
	}
	procs := runtime.GOMAXPROCS(0)
	s.Gen = stats.GenSecond{Sampled: true, Wait: w.Queue, Delay: w.Queue / time.Duration(max(1, w.Slices)), Pressure: w.Pressure, HasPressure: w.HasPressure}
	if procs > 0 {
		s.Gen.Busy = s.Self.CPU / 100 / float64(procs)
	}
}
