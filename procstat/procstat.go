// Package procstat owns reading a process's CPU use and resident memory
// from Linux's /proc, so that a run can report how hard the broker under
// test and mqplan itself worked (the broker.cpu.*, broker.rss.max and
// self.* metrics). It reads two small files per process once a second, on
// the runner's snapshot goroutine: nothing of it is on the per-message hot
// path. It does not keep a history (package stats does) nor judge the
// figures (package report does).
//
// CPU time is read from /proc/PID/stat (utime + stime) in clock ticks. The
// tick is USER_HZ, which the kernel fixes at 100 for what it shows
// userspace on every architecture Go supports on Linux; reading it with
// sysconf would need cgo, and deriving it from /proc/uptime ratios would
// add noise for no gain, so the constant is used. One tick is 10 ms, so a
// short window would turn a single tick into a large figure (33 % over
// 30 ms): a window shorter than MinCPUWindow gives no CPU figure, and its
// ticks count in the next window instead.
//
// A process that has exited but not yet been reaped by its parent (a
// zombie, state Z, or X while it is being removed) still has a /proc
// entry, with no memory and no more CPU: it is reported gone, as if its
// entry had vanished, so that a dead broker is never sampled as idle.
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ticksPerSecond is USER_HZ, the unit of utime and stime in /proc/PID/stat.
const ticksPerSecond = 100

// MinCPUWindow is the shortest time between two samples that gives a CPU
// figure: one clock tick over it is at most 2 % of a core, within a
// figure's rounding, where over the 30 ms of a run's last partial second
// it would read 33 %.
const MinCPUWindow = 500 * time.Millisecond

// maxFile bounds how much of a /proc file is read: stat and status are a
// few hundred bytes to a few kilobytes.
const maxFile = 64 << 10

// ErrUnsupported is returned where there is no /proc to read.
var ErrUnsupported = errors.New("process metrics need Linux's /proc")

// ErrGone is wrapped by the error of a process that has exited: its /proc
// entry is gone, or it is a zombie its parent has not reaped yet.
var ErrGone = errors.New("no such process")

// Sample is one reading of a process.
type Sample struct {
	// CPU is the process's CPU use since the previous sample that gave a
	// CPU figure, in percent of one core (200 is two cores busy); zero
	// when HasCPU is false.
	CPU float64
	// HasCPU is false on the first sample and when less than MinCPUWindow
	// has passed since the previous sample that had a CPU figure: too
	// short a window to measure in 10 ms ticks. The CPU time of such a
	// window is not lost: the next sample's window includes it.
	HasCPU bool
	// RSS is the resident set size in bytes (VmRSS).
	RSS int64
}

// Sampler reads one process's figures; its CPU is the change between
// consecutive calls of Sample at least MinCPUWindow apart. Not safe for
// concurrent use.
type Sampler struct {
	pid   int
	dir   string
	ticks int64
	at    time.Time
	first bool
	now   func() time.Time
}

// New samples process pid; 0 means mqplan itself (/proc/self). It reads
// the process once, so that a PID that does not exist is an error now
// rather than a silent absence later.
func New(pid int) (*Sampler, error) {
	if runtime.GOOS != "linux" {
		return nil, ErrUnsupported
	}
	if pid < 0 {
		return nil, fmt.Errorf("pid %d: a process id is positive", pid)
	}
	dir := "/proc/self"
	if pid > 0 {
		dir = "/proc/" + strconv.Itoa(pid)
	}
	s := &Sampler{pid: pid, dir: dir, first: true, now: time.Now}
	if _, err := s.Sample(); err != nil {
		return nil, err
	}
	return s, nil
}

// PID is the process sampled (0 for mqplan itself).
func (s *Sampler) PID() int { return s.pid }

// Sample reads the process now. An error means the process is gone or its
// files are unreadable.
func (s *Sampler) Sample() (Sample, error) {
	now := s.now()
	ticks, err := cpuTicks(s.dir)
	if err != nil {
		return Sample{}, err
	}
	rss, err := rssBytes(s.dir)
	if err != nil {
		return Sample{}, err
	}
	out := Sample{RSS: rss}
	if !s.first {
		el := now.Sub(s.at)
		if el < MinCPUWindow {
			// Too short to measure: keep the window open, so that the
			// next sample counts these ticks over a longer one.
			return out, nil
		}
		out.CPU = max(0, float64(ticks-s.ticks)/ticksPerSecond/el.Seconds()*100)
		out.HasCPU = true
	}
	s.first = false
	s.ticks, s.at = ticks, now
	return out, nil
}

// readSmall reads a /proc file, at most maxFile bytes.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", filepath.Dir(path), ErrGone)
		}
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile))
	if err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil, fmt.Errorf("%s: %w", filepath.Dir(path), ErrGone)
		}
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

// cpuTicks reads utime+stime from dir/stat. The command name (field 2)
// is in parentheses and may hold spaces and parentheses itself, so the
// fields are counted from the last ')'.
func cpuTicks(dir string) (int64, error) {
	path := dir + "/stat"
	b, err := readSmall(path)
	if err != nil {
		return 0, err
	}
	return parseStat(b, path)
}

// parseStat extracts utime+stime (fields 14 and 15) from a stat line. A
// process in state Z (zombie) or X (dead; x before Linux 3.14) has
// exited: an error wrapping ErrGone.
func parseStat(b []byte, path string) (int64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: no command name in %q", path, truncate(b))
	}
	f := strings.Fields(string(b[i+1:]))
	// After ')': field 3 (state) is f[0], so field n is f[n-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: %d fields after the command name, want at least 13", path, len(f))
	}
	switch f[0] {
	case "Z":
		return 0, fmt.Errorf("%s: %w: it exited and is a zombie its parent has not reaped", filepath.Dir(path), ErrGone)
	case "X", "x":
		return 0, fmt.Errorf("%s: %w: it exited", filepath.Dir(path), ErrGone)
	}
	var total int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%s: CPU time %q is not a tick count", path, s)
		}
		total += v
	}
	return total, nil
}

// rssBytes reads VmRSS from dir/status.
func rssBytes(dir string) (int64, error) {
	path := dir + "/status"
	b, err := readSmall(path)
	if err != nil {
		return 0, err
	}
	return parseStatus(b, path)
}

// parseStatus extracts VmRSS ("VmRSS:   1234 kB") in bytes. A kernel
// thread has no VmRSS: its resident set is 0 (a zombie has none either,
// but parseStat has already reported it gone).
func parseStatus(b []byte, path string) (int64, error) {
	for line := range strings.SplitSeq(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%s: VmRSS %q is not a size in kB", path, strings.TrimSpace(rest))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 || kb > 1<<40 {
			return 0, fmt.Errorf("%s: VmRSS %q is not a size in kB", path, f[0])
		}
		return kb * 1024, nil
	}
	return 0, nil
}

// maxProcs bounds how many /proc entries FindProcess looks at.
const maxProcs = 1 << 20

// FindProcess returns the PID of the one process whose command name
// (/proc/PID/comm, at most 15 characters as the kernel keeps it) is name.
// None or several is an error that names them, so that a run never
// measures the wrong broker.
func FindProcess(name string) (int, error) {
	if runtime.GOOS != "linux" {
		return 0, ErrUnsupported
	}
	if name == "" {
		return 0, errors.New("process: the name is empty")
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("process %q: %w", name, err)
	}
	want := name
	if len(want) > 15 {
		want = want[:15] // the kernel truncates comm to 15 bytes
	}
	self := os.Getpid()
	var found []int
	for i, e := range ents {
		if i >= maxProcs {
			break
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || pid == self {
			continue
		}
		b, err := readSmall("/proc/" + e.Name() + "/comm")
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		if strings.TrimRight(string(b), "\n") == want {
			found = append(found, pid)
		}
	}
	switch len(found) {
	case 0:
		return 0, fmt.Errorf("process %q: no running process has that name", name)
	case 1:
		return found[0], nil
	}
	ids := make([]string, 0, len(found))
	for i, p := range found {
		if i == 5 {
			ids = append(ids, "...")
			break
		}
		ids = append(ids, strconv.Itoa(p))
	}
	return 0, fmt.Errorf("process %q: %d processes have that name (pids %s); write pid: N instead", name, len(found), strings.Join(ids, ", "))
}

// truncate shortens b for an error message.
func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}
