package procstat

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
)

// This file reads what tells whether mqplan, the load generator, was
// itself short of CPU: how long its threads waited in the run queue for a
// CPU (schedstat), and how much the whole machine did (pressure stall
// information, /proc/pressure/cpu). Both are cumulative counters: a
// SelfWait reads them once a second, on the snapshot goroutine, and
// returns the change.

// maxTasks bounds how many of mqplan's threads are read: a Go process
// has GOMAXPROCS running threads plus those blocked in system calls, a
// few dozen in practice.
const maxTasks = 4096

// Wait is the change of the disturbance counters over one window.
type Wait struct {
	// Queue is how long mqplan's threads, summed, waited in the run queue
	// for a CPU during the window (schedstat field 2). Threads that ended
	// during the window lose their share: a lower bound.
	Queue time.Duration
	// Slices is how many times mqplan's threads were given a CPU during
	// the window (schedstat field 3): Queue / Slices is the mean wait
	// each time one became runnable.
	Slices int64
	// Pressure is how long at least one runnable task of the machine
	// waited for a CPU during the window (/proc/pressure/cpu "some"),
	// valid when HasPressure (kernels before 4.20, or with PSI disabled,
	// have no such file).
	Pressure    time.Duration
	HasPressure bool
}

// SelfWait reads mqplan's run-queue wait and the machine's CPU pressure as
// changes between calls. Not safe for concurrent use.
type SelfWait struct {
	queue, slices, pressure int64
	hasPressure             bool
	// tasks and pressurePath are the files read, replaceable by tests.
	tasks, pressurePath string
}

// NewSelfWait starts reading mqplan's own wait. It reads the counters
// once, so that the first Sample is the change since now. Where there is
// no schedstat (not Linux, or a kernel without CONFIG_SCHED_INFO) it is
// ErrUnsupported.
func NewSelfWait() (*SelfWait, error) {
	if runtime.GOOS != "linux" {
		return nil, ErrUnsupported
	}
	w := &SelfWait{tasks: "/proc/self/task", pressurePath: "/proc/pressure/cpu"}
	q, n, err := w.readQueue()
	if err != nil {
		return nil, err
	}
	w.queue, w.slices = q, n
	if p, err := w.readPressure(); err == nil {
		w.pressure, w.hasPressure = p, true
	}
	return w, nil
}

// Sample returns the wait since the previous call.
func (w *SelfWait) Sample() (Wait, error) {
	q, n, err := w.readQueue()
	if err != nil {
		return Wait{}, err
	}
	// A thread that exited takes its wait with it: the sum can go down.
	out := Wait{Queue: time.Duration(max(0, q-w.queue)), Slices: max(0, n-w.slices)}
	w.queue, w.slices = q, n
	if w.hasPressure {
		p, err := w.readPressure()
		if err == nil {
			out.Pressure = time.Duration(max(0, p-w.pressure)) * time.Microsecond
			out.HasPressure = true
			w.pressure = p
		} else {
			w.hasPressure = false
		}
	}
	return out, nil
}

// readQueue sums field 2 of every thread's schedstat: /proc/self/schedstat
// alone is the main thread's, which in a Go process does little of the
// work.
func (w *SelfWait) readQueue() (wait, slices int64, err error) {
	ents, err := os.ReadDir(w.tasks)
	if err != nil {
		return 0, 0, fmt.Errorf("mqplan's threads: %w", err)
	}
	read := 0
	for i, e := range ents {
		if i >= maxTasks {
			break
		}
		path := w.tasks + "/" + e.Name() + "/schedstat"
		b, err := readSmall(path)
		if err != nil {
			continue // the thread ended meanwhile
		}
		v, n, err := ParseSchedstat(b)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", path, err)
		}
		wait += v
		slices += n
		read++
	}
	if read == 0 {
		return 0, 0, fmt.Errorf("%s: no thread's schedstat could be read: %w", w.tasks, ErrUnsupported)
	}
	return wait, slices, nil
}

func (w *SelfWait) readPressure() (int64, error) {
	b, err := readSmall(w.pressurePath)
	if err != nil {
		return 0, err
	}
	return ParsePressure(b)
}

// ParseSchedstat returns the run-queue wait in nanoseconds and the count
// of timeslices, the second and third of the three numbers of a schedstat
// line ("run_ns wait_ns timeslices").
func ParseSchedstat(b []byte) (wait, slices int64, err error) {
	f := bytes.Fields(b)
	if len(f) != 3 {
		return 0, 0, fmt.Errorf("schedstat %q: want 3 numbers, got %d fields", truncate(b), len(f))
	}
	wait, err = strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil || wait < 0 {
		return 0, 0, fmt.Errorf("schedstat %q: the wait %q is not a count of nanoseconds", truncate(b), truncate(f[1]))
	}
	slices, err = strconv.ParseInt(string(f[2]), 10, 64)
	if err != nil || slices < 0 {
		return 0, 0, fmt.Errorf("schedstat %q: the timeslices %q are not a count", truncate(b), truncate(f[2]))
	}
	return wait, slices, nil
}

// ParsePressure returns the "some" line's total (microseconds during
// which at least one runnable task waited for a CPU) of a
// /proc/pressure/cpu file:
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=12345
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
func ParsePressure(b []byte) (int64, error) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 0 || string(f[0]) != "some" {
			continue
		}
		for _, kv := range f[1:] {
			v, ok := bytes.CutPrefix(kv, []byte("total="))
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("cpu pressure: total %q is not a count of microseconds", truncate(v))
			}
			return n, nil
		}
		return 0, fmt.Errorf("cpu pressure: the some line %q has no total", truncate(line))
	}
	return 0, fmt.Errorf("cpu pressure %q: no some line", truncate(b))
}
