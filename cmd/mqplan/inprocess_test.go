package main

import (
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// This file runs commands in-process, on a fake env: standard streams in
// memory, an environment of the test's choosing, signals the test
// delivers through env.notify, and an exit that is recorded instead of
// ending the test binary. Only tests of real signals run the built binary
// (binary_test.go).

// pipe is a command's output stream in-process: writes never block (as
// into a roomy OS pipe, so a test that stops reading cannot stall the
// command), reads block until there is data or the command has returned
// (then EOF), and String is everything written so far.
type pipe struct {
	mu      sync.Mutex
	more    *sync.Cond
	buf     []byte
	off     int  // what Read has returned
	closed  bool // the command returned: EOF after buf
	aborted bool // the test gave up reading: Read fails at once
}

func newPipe() *pipe {
	p := &pipe{}
	p.more = sync.NewCond(&p.mu)
	return p
}

func (p *pipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, io.ErrClosedPipe
	}
	p.buf = append(p.buf, b...)
	p.more.Broadcast()
	return len(b), nil
}

func (p *pipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.off == len(p.buf) && !p.closed && !p.aborted {
		p.more.Wait()
	}
	switch {
	case p.aborted:
		return 0, errors.New("pipe: the test stopped reading")
	case p.off == len(p.buf):
		return 0, io.EOF
	}
	n := copy(b, p.buf[p.off:])
	p.off += n
	return n, nil
}

// close is the command's end: readers get EOF after what was written.
func (p *pipe) close() {
	p.mu.Lock()
	p.closed = true
	p.more.Broadcast()
	p.mu.Unlock()
}

// abort ends reads at once, as killing a process ends reads of its pipes.
func (p *pipe) abort() {
	p.mu.Lock()
	p.aborted = true
	p.more.Broadcast()
	p.mu.Unlock()
}

// String is everything written so far.
func (p *pipe) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.buf)
}

// cmdOpts is what a test gives an in-process command besides arguments.
type cmdOpts struct {
	stdin io.Reader         // nil: empty
	vars  map[string]string // the environment; nothing else is set
	// terminal makes standard output and error terminals, for colour.
	terminal bool
}

// running is a command started in-process (startCmd).
type running struct {
	stdout, stderr *pipe

	mu    sync.Mutex
	chans map[chan<- os.Signal]bool // the channels env.notify registered

	exited chan int      // the code env.exit was called with, once
	done   chan struct{} // closed when the command returned
	code   int           // run's exit code, once done
}

// fakeEnv is the env of r: everything the command takes from the process
// comes from r.
func (r *running) fakeEnv(o cmdOpts) *env {
	stdin := o.stdin
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	return &env{
		stdin:  stdin,
		stdout: r.stdout,
		stderr: r.stderr,
		lookupEnv: func(name string) (string, bool) {
			v, ok := o.vars[name]
			return v, ok
		},
		notify: func(c chan<- os.Signal, _ ...os.Signal) {
			r.mu.Lock()
			r.chans[c] = true
			r.mu.Unlock()
		},
		stopNotify: func(c chan<- os.Signal) {
			r.mu.Lock()
			delete(r.chans, c)
			r.mu.Unlock()
		},
		exit: func(code int) {
			select {
			case r.exited <- code:
			default:
			}
		},
		// GOMAXPROCS is the test binary's: the choice is tested on its
		// own (TestGeneratorProcs), and parallel runs must not change it
		// under each other.
		setProcs:   func(int) {},
		isTerminal: func(io.Writer) bool { return o.terminal },
	}
}

// startCmd runs mqplan args in-process until it returns; the test reads
// its output from r.stdout and r.stderr. If it still runs when the test
// ends, it is stopped as a process would be killed.
func startCmd(t *testing.T, args ...string) *running {
	t.Helper()
	return startCmdWith(t, cmdOpts{}, args...)
}

// startCmdWith is startCmd with standard input and an environment.
func startCmdWith(t *testing.T, o cmdOpts, args ...string) *running {
	t.Helper()
	r := &running{stdout: newPipe(), stderr: newPipe(), chans: map[chan<- os.Signal]bool{},
		exited: make(chan int, 1), done: make(chan struct{})}
	e := r.fakeEnv(o)
	go func() {
		defer close(r.done)
		r.code = run(e, args)
		r.stdout.close()
		r.stderr.close()
	}()
	t.Cleanup(func() {
		r.kill()
		select {
		case <-r.done:
		case <-time.After(time.Minute):
			t.Errorf("mqplan %v still running a minute after the test ended", args)
		}
	})
	return r
}

// signal delivers sig as the signal package would: to every channel
// registered for it, without blocking. A command that registered none
// would have been killed by it: the test is wrong.
func (r *running) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if r.deliver(sig) == 0 {
		t.Fatalf("signal %v: the command does not listen for signals", sig)
	}
}

// deliver sends sig to the registered channels and returns how many
// there are.
func (r *running) deliver(sig os.Signal) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.chans {
		select {
		case c <- sig:
		default:
		}
	}
	return len(r.chans)
}

// kill stops the command as killing its process would, as far as that
// can be done in-process: reads of its output end, and a stop signal ends
// what runs (a run, the broker).
func (r *running) kill() {
	r.stdout.abort()
	r.stderr.abort()
	r.deliver(syscall.SIGTERM)
}

// wait waits for the command to end and returns its exit code: env.exit's
// when it was called (the process would have ended there), else run's.
func (r *running) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case code := <-r.exited:
		return code
	case <-r.done:
		select {
		case code := <-r.exited:
			return code
		default:
			return r.code
		}
	case <-time.After(limit):
		t.Fatalf("mqplan still running after %v", limit)
	}
	return -1
}

// runCmd runs mqplan args in-process to its end, in at most 2 minutes.
func runCmd(t *testing.T, args ...string) result {
	t.Helper()
	return runCmdWith(t, cmdOpts{}, args...)
}

// cmdCase is one command line and what a user must see: its exit code,
// lines its output holds (stdout and stderr) and lines it must not.
type cmdCase struct {
	name         string
	args         []string
	code         int
	want, absent []string
}

// runCmdCases runs each case in-process as a subtest.
func runCmdCases(t *testing.T, cases []cmdCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, tt.args...)
			out := r.stdout + r.stderr
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.absent {
				if strings.Contains(out, w) {
					t.Errorf("output holds %q:\n%s", w, out)
				}
			}
		})
	}
}

// runCmdWith is runCmd with standard input and an environment.
func runCmdWith(t *testing.T, o cmdOpts, args ...string) result {
	t.Helper()
	r := startCmdWith(t, o, args...)
	code := r.wait(t, 2*time.Minute)
	// After env.exit the command still returns; its output is whole then.
	select {
	case <-r.done:
	case <-time.After(time.Minute):
		t.Fatalf("mqplan %v still running a minute after it exited", args)
	}
	return result{code: code, stdout: r.stdout.String(), stderr: r.stderr.String()}
}
