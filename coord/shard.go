package coord

import (
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// clockSamples is how many ping/pong exchanges a shard makes to estimate
// its offset to the coordinator's clock; the one with the smallest round
// trip is kept.
const clockSamples = 16

// Shard is a shard's side of the protocol: it implements runner.Sync.
type Shard struct {
	c *conn
	// offset is θ, the coordinator's clock minus this shard's, and delay
	// δ, half the round trip of the sample it came from (ns); base is
	// when they were taken, a wall reading with its monotonic one, from
	// which every later local wall time is derived without reading the
	// wall clock again (an NTP step must not move the run).
	offset, delay int64
	base          time.Time
	// baseWall is base's wall reading as this shard's clock gives it
	// (the test hook's skew included), and applied the offset used to
	// turn local times into the coordinator's: offset, or 0 when the
	// test hook disables the correction.
	baseWall, applied int64
	// test is the test-only clock hook (testclock.go), zero in normal use.
	test TestClock
	// pongs receives the coordinator's answers to the pings of Resample,
	// once the reader runs.
	pongs chan *frame
	// epoch is the common epoch once Epoch returned it.
	epoch int64
	// same is set when the shard shares the coordinator's clocks
	// (samehost.go): monoBase is then base's CLOCK_MONOTONIC reading,
	// and epochMono the epoch's, once Epoch returned it.
	same                bool
	monoBase, epochMono int64

	mu      sync.Mutex
	waiting map[string]chan *frame
	acked   chan struct{}
	// stopped is closed when a stop arrives or the coordinator is lost;
	// lost then holds why, when it was lost.
	stopped  chan struct{}
	stopOnce sync.Once
	lost     chan struct{}
	lostErr  error
	ackOnce  sync.Once
	beatStop chan struct{}
}

// ErrLost is a coordinator whose connection ended during the run.
var ErrLost = errors.New("the coordinator was lost")

// Join dials the coordinator at addr, retrying until timeout (it may
// start later than the shard), proves the run's secret (empty: none;
// auth.go) with its hello, checks the coordinator's proof, and samples
// the clock. A refusal is a *RefusedError, a coordinator that fails to
// prove the secret an *AuthError; a coordinator never reached within
// timeout, an error naming it.
func Join(ctx context.Context, addr string, h Hello, secret []byte, timeout, idle time.Duration) (*Shard, error) {
	return JoinWith(ctx, addr, h, secret, timeout, idle, TestClock{})
}

// JoinWith is Join with a test clock hook (TestClock; the zero value is
// none).
func JoinWith(ctx context.Context, addr string, h Hello, secret []byte, timeout, idle time.Duration, tc TestClock) (*Shard, error) {
	if idle <= 0 {
		idle = defaultIdle
	}
	h.Protocol = Protocol
	deadline := time.Now().Add(timeout)
	wait := 50 * time.Millisecond
	var nc net.Conn
	for {
		var err error
		d := net.Dialer{Timeout: min(idle, time.Until(deadline))}
		nc, err = d.DialContext(ctx, "tcp", addr)
		if err == nil {
			break
		}
		if ctx.Err() != nil || time.Until(deadline) < wait {
			return nil, fmt.Errorf("shard %d/%d: the coordinator %s was not reached within %v: %w", h.Shard, h.N, addr, timeout, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		wait = min(2*wait, time.Second)
	}
	s := &Shard{c: newConn(nc, idle), waiting: map[string]chan *frame{}, acked: make(chan struct{}), lost: make(chan struct{}),
		stopped: make(chan struct{}), beatStop: make(chan struct{}), test: tc, pongs: make(chan *frame, 1)}
	if err := s.hello(h, secret); err != nil {
		nc.Close()
		return nil, err
	}
	go s.c.beat(s.beatStop)
	go s.read()
	return s, nil
}

// hello answers the coordinator's challenge with the shard's hello and
// proof, checks the coordinator's proof in its welcome, and samples the
// clock, before the reader starts. The coordinator welcomes each shard as
// it comes; the wait for the others is the epoch barrier's.
func (s *Shard) hello(h Hello, secret []byte) error {
	wantProof, err := s.answer(&h, secret)
	if err != nil {
		return err
	}
	for {
		s.c.plainRefuse = true
		f, err := s.c.read()
		s.c.plainRefuse = false
		if err != nil {
			return fmt.Errorf("shard %d/%d: hello: %w", h.Shard, h.N, err)
		}
		if f.Type == tRefuse {
			return &RefusedError{Reason: f.Error}
		}
		if f.Type == tWelcome {
			if !hmac.Equal(f.Proof, wantProof) {
				return fmt.Errorf("shard %d/%d: the coordinator %s: %w", h.Shard, h.N, s.c.c.RemoteAddr(),
					&AuthError{Why: "its welcome does not prove the run's secret (another secret, or not the run's coordinator)"})
			}
			if s.sameHost(f) {
				return s.c.write(&frame{Type: tClock, Offset: s.offset, Delay: s.delay})
			}
			break
		}
	}
	best := int64(-1)
	for range clockSamples {
		t0 := time.Now()
		w0 := s.wall(t0)
		if err := s.c.write(&frame{Type: tPing, T0: w0}); err != nil {
			return fmt.Errorf("shard %d/%d: clock sample: %w", h.Shard, h.N, err)
		}
		var f *frame
		for f == nil || f.Type != tPong {
			var err error
			if f, err = s.c.read(); err != nil {
				return fmt.Errorf("shard %d/%d: clock sample: %w", h.Shard, h.N, err)
			}
			switch f.Type {
			case tRefuse:
				return &RefusedError{Reason: f.Error}
			case tStop: // another shard was stopped already: so is this one
				s.stopOnce.Do(func() { close(s.stopped) })
			}
		}
		// The receive time from t0's monotonic reading: one wall read a
		// sample, t0's.
		t3 := w0 + int64(time.Since(t0))
		delay := ((t3 - f.T0) - (f.T2 - f.T1)) / 2
		if best < 0 || delay < best {
			best = delay
			s.offset = ((f.T1 - f.T0) + (f.T2 - t3)) / 2
			s.delay = delay
			s.base, s.baseWall = t0, w0
		}
	}
	if s.applied = s.offset; s.test.NoCorrection {
		s.applied = 0
	}
	return s.c.write(&frame{Type: tClock, Offset: s.offset, Delay: s.delay})
}

// answer reads the coordinator's challenge and sends the hello with its
// nonce and proof; the connection is sealed with the session key from
// here on. It returns the proof the coordinator's welcome must carry.
func (s *Shard) answer(h *Hello, secret []byte) ([]byte, error) {
	f, err := s.c.read()
	switch {
	case err != nil:
		return nil, fmt.Errorf("shard %d/%d: no challenge from the coordinator %s (an mqplan of coordinator protocol %d sends one at once): %w", h.Shard, h.N, s.c.c.RemoteAddr(), Protocol, err)
	case f.Type == tRefuse:
		return nil, &RefusedError{Reason: f.Error}
	case f.Type != tChallenge:
		return nil, fmt.Errorf("shard %d/%d: the coordinator %s sent a %s frame, not a challenge", h.Shard, h.N, s.c.c.RemoteAddr(), f.Type)
	case f.Protocol != Protocol:
		return nil, &RefusedError{Reason: fmt.Sprintf("the coordinator speaks coordinator protocol %d, shard %d %d: run one build everywhere", f.Protocol, h.Shard, Protocol)}
	}
	if err := checkNonce("the coordinator", f.Nonce); err != nil {
		return nil, fmt.Errorf("shard %d/%d: the coordinator %s: %w", h.Shard, h.N, s.c.c.RemoteAddr(), err)
	}
	h.Keyed = len(secret) > 0
	ns := newNonce()
	if err := s.c.write(&frame{Type: tHello, Hello: h, Nonce: ns, Proof: proof(secret, labelShard, ns, f.Nonce, h)}); err != nil {
		return nil, fmt.Errorf("shard %d/%d: hello: %w", h.Shard, h.N, err)
	}
	s.c.keyed(sessionKey(secret, ns, f.Nonce), dirToCoordinator)
	return proof(secret, labelCoordinator, ns, f.Nonce, h), nil
}

// Clock returns θ, the coordinator's clock minus this shard's, and δ, its
// uncertainty (half the best sample's round trip; on the coordinator's
// host, θ is 0 and δ the gaps of the clock reads that mapped the
// epoch: see SameHost).
func (s *Shard) Clock() (offset, delay time.Duration) {
	return time.Duration(s.offset), time.Duration(s.delay)
}

// coordinatorNow is the coordinator's clock now as this shard estimates
// it, from the monotonic clock since the clock sample.
func (s *Shard) coordinatorNow() int64 {
	return s.baseWall + int64(time.Since(s.base)) + s.applied
}

// read dispatches the coordinator's frames until the connection ends.
func (s *Shard) read() {
	for {
		f, err := s.c.read()
		if err != nil {
			s.mu.Lock()
			s.lostErr = fmt.Errorf("%w: %v", ErrLost, err)
			for _, ch := range s.waiting {
				close(ch)
			}
			s.waiting = map[string]chan *frame{}
			s.mu.Unlock()
			close(s.lost)
			s.stopOnce.Do(func() { close(s.stopped) })
			return
		}
		switch f.Type {
		case tGo:
			s.mu.Lock()
			if ch := s.waiting[f.Name]; ch != nil {
				ch <- f
				delete(s.waiting, f.Name)
			}
			s.mu.Unlock()
		case tStop, tRefuse:
			s.stopOnce.Do(func() { close(s.stopped) })
		case tAck:
			s.ackOnce.Do(func() { close(s.acked) })
		case tPong:
			select {
			case s.pongs <- f:
			default: // an answer nobody waits for any more
			}
		}
	}
}

// Stopped is closed when the run must stop: a stop from the coordinator
// (another shard was interrupted) or the coordinator lost (Lost says).
func (s *Shard) Stopped() <-chan struct{} { return s.stopped }

// Lost returns why the coordinator was lost, or nil.
func (s *Shard) Lost() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostErr
}

// Stop asks the coordinator to stop every shard (this one was
// interrupted).
func (s *Shard) Stop() { _ = s.c.write(&frame{Type: tStop}) }

// Epoch waits for every shard to be ready and returns the common epoch
// (coordinator-clock Unix ns), slept until on the monotonic clock with
// this shard's fixed offset.
func (s *Shard) Epoch(ctx context.Context) (int64, error) {
	f, err := s.barrier(ctx, "epoch", nil, 0)
	if err != nil {
		return 0, err
	}
	s.epochMono = 0
	if s.same && f.Mono != 0 {
		s.epochMono = f.Mono
	}
	wait := time.Duration(f.At - s.coordinatorNow())
	if s.epochMono != 0 {
		wait = time.Until(s.instantOfMono(s.epochMono))
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	s.epoch = f.At
	return f.At, nil
}

// EpochInstant is the common epoch as an instant of this shard's
// monotonic clock, derived from the clock sample as coordinatorNow is: the
// run's epoch must be this instant, not the moment the sleep until it
// ended (a timer wakes late by however long the scheduler takes, which
// would misalign the shards' epochs by their wake-up delays). The zero
// time before Epoch returned.
func (s *Shard) EpochInstant() time.Time {
	if s.epoch == 0 {
		return time.Time{}
	}
	if s.epochMono != 0 {
		return s.instantOfMono(s.epochMono)
	}
	return s.base.Add(time.Duration(s.epoch - s.baseWall - s.applied))
}

// EpochWall is the common epoch Epoch returned (coordinator-clock Unix
// ns), 0 before.
func (s *Shard) EpochWall() int64 { return s.epoch }

// Barrier implements runner.Sync: it returns vals summed over the shards
// and the latest at.
func (s *Shard) Barrier(ctx context.Context, name string, vals []int64, at time.Duration) ([]int64, time.Duration, error) {
	f, err := s.barrier(ctx, name, vals, int64(at))
	if err != nil {
		return nil, 0, err
	}
	sums := f.Vals
	if sums == nil {
		sums = make([]int64, len(vals))
	}
	return sums, time.Duration(f.At), nil
}

func (s *Shard) barrier(ctx context.Context, name string, vals []int64, at int64) (*frame, error) {
	ch := make(chan *frame, 1)
	s.mu.Lock()
	if s.lostErr != nil {
		s.mu.Unlock()
		return nil, s.lostErr
	}
	s.waiting[name] = ch
	s.mu.Unlock()
	if err := s.c.write(&frame{Type: tReady, Name: name, Vals: vals, At: at}); err != nil {
		return nil, fmt.Errorf("barrier %s: %w", name, err)
	}
	select {
	case f, ok := <-ch:
		if !ok {
			return nil, s.Lost()
		}
		return f, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("barrier %s: %w", name, ctx.Err())
	}
}

// HandIn sends the shard's partial result and waits, within timeout, for
// the coordinator to acknowledge it.
func (s *Shard) HandIn(data []byte, timeout time.Duration) error {
	if err := s.c.write(&frame{Type: tPartial, Data: data}); err != nil {
		return fmt.Errorf("hand in the partial result: %w", err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.acked:
		return nil
	case <-s.lost:
		if s.Acknowledged() { // the coordinator acknowledged, then went
			return nil
		}
		return fmt.Errorf("hand in the partial result: %w", s.Lost())
	case <-t.C:
		return fmt.Errorf("hand in the partial result: no acknowledgement within %v", timeout)
	}
}

// Acknowledged reports whether the coordinator has acknowledged the
// partial result: after that, its going away is no loss. The reader
// records the acknowledgement before it can see the connection end.
func (s *Shard) Acknowledged() bool {
	select {
	case <-s.acked:
		return true
	default:
		return false
	}
}

// Close ends the connection.
func (s *Shard) Close() error {
	close(s.beatStop)
	return s.c.c.Close()
}
