//go:build linux

package runner

import (
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// timerfdSleeper sleeps on a Linux timerfd read through the Go netpoller:
// the kernel's high-resolution timer makes the fd readable on time and the
// netpoller returns at once, instead of in whole milliseconds.
type timerfdSleeper struct {
	fd     int
	f      *os.File
	buf    [8]byte
	woken  atomic.Bool
	closed atomic.Bool
}

func newSleeper() (sleeper, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		// No timerfd (a seccomp sandbox, say): fall back to Go timers.
		return newTimerSleeper(), nil
	}
	return &timerfdSleeper{fd: fd, f: os.NewFile(uintptr(fd), "mqplan-pacer")}, nil
}

func (s *timerfdSleeper) sleep(d time.Duration) {
	if s.woken.Swap(false) {
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(s.fd, 0, &spec, nil); err != nil {
		time.Sleep(d) // cannot happen with a valid fd and duration
		return
	}
	_, _ = s.f.Read(s.buf[:])
}

// wake interrupts a sleep: a deadline in the past makes the pending Read
// return at once.
func (s *timerfdSleeper) wake() {
	s.woken.Store(true)
	_ = s.f.SetReadDeadline(time.Now())
}

func (s *timerfdSleeper) close() {
	if s.closed.CompareAndSwap(false, true) {
		_ = s.f.Close()
	}
}
