package coord

import (
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is what the coordinator expects of every shard of its run.
type Config struct {
	// Hello is the run's identity: every shard's hello must equal it but
	// for Shard.
	Hello Hello
	// JoinTimeout bounds the wait for every shard to say hello
	// (--coordinator-timeout).
	JoinTimeout time.Duration
	// Idle is how long a shard may stay silent before it counts as lost
	// (default 10 s: ten beats).
	Idle time.Duration
	// Joined, when set, is called once every shard has joined (on
	// Serve's goroutine; it must return quickly).
	Joined func()
	// Lost, when set, is called as soon as a shard that joined is lost
	// before handing in its part (silent for Idle, or its connection
	// ended), on Serve's goroutine, with why: the run goes on without
	// it, and whoever started the shard's process can end it now rather
	// than wait for an exit that a stopped or hung process never makes.
	Lost func(shard int, why error)
	// Secret is the run's shared secret: every shard must prove it
	// (auth.go). Empty, the protocol runs under an empty key, which
	// anyone can compute: the caller keeps such a coordinator on
	// loopback.
	Secret []byte
	// Refused, when set, is called once for every peer that spoke the
	// protocol but failed authentication before it joined (wrong or no
	// secret, a replayed or altered hello, another protocol version),
	// with its address and why, from the connection's goroutine. A shard
	// that joined and then failed a MAC is reported through Lost.
	Refused func(addr string, why error)
	// Noise, when set, is called for the first few connections that did
	// not speak the protocol at all (garbage, an HTTP probe, a port scan
	// connecting and leaving), with their address and why; they are
	// closed and counted (Result.Noise) but do not touch the run.
	Noise func(addr string, why error)
	// EpochDelay is how far ahead of the last shard's arrival the common
	// epoch is set (default 1 s): long enough for the go frame to reach
	// every shard before the epoch.
	EpochDelay time.Duration
}

// defaultIdle is Config.Idle's default.
const defaultIdle = 10 * time.Second

// MissingError is a run that could not start: shards never joined.
type MissingError struct {
	Shards []int
	N      int
	After  time.Duration
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("shards %s of %d never joined the coordinator within %v", joinInts(e.Shards), e.N, e.After)
}

// RefusedError is a shard whose hello did not match the run's: another
// plan, assignment, run id or build. It is invalid input (exit 2), on
// the coordinator and on the shard.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

// Result is what a coordinator collected.
type Result struct {
	// Parts holds each shard's partial result (the JSON document), nil
	// for a shard that never handed one in.
	Parts [][]byte
	// Lost lists the shards whose connection dropped during the run:
	// their part may be missing, and the run is incomplete.
	Lost []int
	// Clock is each shard's offset to the coordinator's clock and the
	// uncertainty of it, as the shard measured (ns).
	Offset, Delay []int64
	// Stopped is set when a stop (an interruption) reached the shards.
	Stopped bool
	// Refused holds one line for each peer that spoke the protocol but
	// failed authentication (naming its address), a joined shard's
	// failed MAC included: the run cannot be trusted to be complete.
	Refused []string
	// Noise counts the connections that did not speak the protocol.
	Noise int
}

// maxNoiseNoted bounds the Noise calls of one run: a port scanner that
// connects a thousand times is told of a few times, then counted.
const maxNoiseNoted = 5

// Coordinator runs the protocol's coordinator side on a listener.
type Coordinator struct {
	ln  net.Listener
	cfg Config
}

// Listen listens on addr (HOST:PORT) for the shards of one run.
func Listen(addr string, cfg Config) (*Coordinator, error) {
	if cfg.Hello.N < 1 {
		return nil, fmt.Errorf("coordinator: %d shards", cfg.Hello.N)
	}
	if cfg.Idle <= 0 {
		cfg.Idle = defaultIdle
	}
	if cfg.EpochDelay <= 0 {
		cfg.EpochDelay = time.Second
	}
	if cfg.JoinTimeout <= 0 {
		cfg.JoinTimeout = 5 * time.Minute
	}
	cfg.Hello.Protocol = Protocol
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	return &Coordinator{ln: ln, cfg: cfg}, nil
}

// Addr is the address the coordinator listens on.
func (co *Coordinator) Addr() string { return co.ln.Addr().String() }

// Close stops listening (Serve closes it too).
func (co *Coordinator) Close() error { return co.ln.Close() }

// event is what a shard's connection brings to Serve's loop.
type event struct {
	shard int
	f     *frame
	err   error
	c     *conn
	addr  string
}

// Serve runs one run: it admits every shard (refusing mismatches),
// answers their clock samples, opens each barrier once every shard still
// connected has reached it, relays a stop to all, and collects the
// partial results. Cancelling ctx stops the run (the shards drain and
// hand in their parts). It returns a *MissingError when shards never
// joined and a *RefusedError when one ran something else.
func (co *Coordinator) Serve(ctx context.Context) (*Result, error) {
	defer co.ln.Close()
	n := co.cfg.Hello.N
	events := make(chan event, 4*n)
	done := make(chan struct{})
	defer close(done)
	go co.accept(events, done)

	conns := make([]*conn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.c.Close()
			}
		}
	}()
	res := &Result{Parts: make([][]byte, n), Offset: make([]int64, n), Delay: make([]int64, n)}
	live := make([]bool, n)
	handedIn := make([]bool, n)
	type barrier struct {
		in   []bool
		sums []int64
		at   int64
	}
	barriers := map[string]*barrier{}
	broadcast := func(f *frame) {
		for i, c := range conns {
			if c != nil && live[i] {
				_ = c.write(f)
			}
		}
	}
	// open sends the go of every barrier that every live shard reached.
	open := func() {
		for name, b := range barriers {
			all := true
			for i := range live {
				all = all && (!live[i] || b.in[i])
			}
			if !all {
				continue
			}
			// A time the shards must reach together is set ahead by
			// twice the slowest shard's one-way delay on top, so that
			// the go reaches every shard before it.
			var slowest int64
			for _, d := range res.Delay {
				slowest = max(slowest, d)
			}
			at := b.at
			if at > 0 {
				at += 2 * slowest
			}
			var mono int64
			if name == "epoch" {
				// The epoch on the wall clock, and on CLOCK_MONOTONIC
				// for the shards of this host (samehost.go).
				now, m, _, ok := monoPair()
				if !ok {
					now, m = time.Now(), 0
				}
				ahead := co.cfg.EpochDelay + time.Duration(2*slowest)
				at = now.Add(ahead).UnixNano()
				if ok {
					mono = m + int64(ahead)
				}
			}
			broadcast(&frame{Type: tGo, Name: name, Vals: b.sums, At: at, Mono: mono})
			delete(barriers, name)
		}
	}
	joined := 0
	join := time.NewTimer(co.cfg.JoinTimeout)
	defer join.Stop()
	ctxDone := ctx.Done()
	for {
		finished := joined == n
		for i := range live {
			finished = finished && (!live[i] || handedIn[i])
		}
		if finished {
			return res, nil
		}
		var ev event
		select {
		case <-join.C:
			if joined < n {
				var missing []int
				for i, c := range conns {
					if c == nil {
						missing = append(missing, i)
					}
				}
				broadcast(&frame{Type: tStop, Error: "shards never joined"})
				return res, &MissingError{Shards: missing, N: n, After: co.cfg.JoinTimeout}
			}
			continue
		case <-ctxDone:
			ctxDone = nil
			res.Stopped = true
			broadcast(&frame{Type: tStop})
			if joined < n {
				return res, fmt.Errorf("stopped before every shard joined: %w", ctx.Err())
			}
			continue
		case ev = <-events:
		}
		if ev.f == nil { // the connection ended
			co.ended(ev, res, conns, live, handedIn, open)
			continue
		}
		switch ev.f.Type {
		case tHello:
			h := ev.f.Hello
			if reason := co.check(h, conns); reason != "" {
				_ = ev.c.write(&frame{Type: tRefuse, Error: reason})
				ev.c.c.Close()
				broadcast(&frame{Type: tRefuse, Error: reason})
				return res, &RefusedError{Reason: reason}
			}
			conns[h.Shard], live[h.Shard] = ev.c, true
			if joined++; joined == n && co.cfg.Joined != nil {
				co.cfg.Joined()
			}
			_ = ev.c.write(co.welcome(ev.c.welcomeProof))
			go ev.c.beat(done)
		case tClock:
			res.Offset[ev.shard], res.Delay[ev.shard] = ev.f.Offset, ev.f.Delay
		case tReady:
			b := barriers[ev.f.Name]
			if b == nil {
				b = &barrier{in: make([]bool, n), sums: make([]int64, len(ev.f.Vals))}
				barriers[ev.f.Name] = b
			}
			if len(ev.f.Vals) != len(b.sums) {
				// Shards of one plan send as many figures: one that does
				// not runs something else.
				reason := fmt.Sprintf("shard %d sent %d figures at barrier %s, the others %d", ev.shard, len(ev.f.Vals), ev.f.Name, len(b.sums))
				broadcast(&frame{Type: tRefuse, Error: reason})
				return res, &RefusedError{Reason: reason}
			}
			b.in[ev.shard] = true
			for i, v := range ev.f.Vals {
				b.sums[i] += v
			}
			b.at = max(b.at, ev.f.At)
			if joined == n {
				open()
			}
		case tStop:
			if !res.Stopped {
				res.Stopped = true
				broadcast(&frame{Type: tStop})
			}
		case tPartial:
			res.Parts[ev.shard], handedIn[ev.shard] = ev.f.Data, true
			_ = ev.c.write(&frame{Type: tAck})
		}
	}
}

// lostWhy says why a shard's connection ended: silence for the idle
// timeout (a process stopped, hung, or cut off without a reset), or the
// connection's own error.
func (co *Coordinator) lostWhy(addr string, err error) error {
	var ae *AuthError
	if errors.As(err, &ae) {
		return fmt.Errorf("its peer %s: %w", addr, ae)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("silent for %v (no beat)", co.cfg.Idle)
	}
	if err == nil || errors.Is(err, io.EOF) {
		return errors.New("its connection closed")
	}
	return fmt.Errorf("its connection failed: %w", err)
}

// welcome is the frame that admits a shard: with this host's boot id and
// a wall and CLOCK_MONOTONIC reading of one instant (within ±Delay), from
// which a shard of this host finds that it shares the clocks (samehost.go).
// It carries the coordinator's proof of the secret (auth.go).
func (co *Coordinator) welcome(proof []byte) *frame {
	at, mono, gap, ok := monoPair()
	if !ok {
		return &frame{Type: tWelcome, Proof: proof}
	}
	return &frame{Type: tWelcome, Proof: proof, Boot: bootID(), At: at.UnixNano(), Mono: mono, Delay: int64(gap)}
}

// ended handles a connection that ended: a peer refused before it joined
// (recorded, and the run goes on), a connection that never spoke the
// protocol (counted), or a shard that joined and is now lost.
func (co *Coordinator) ended(ev event, res *Result, conns []*conn, live, handedIn []bool, open func()) {
	var ae *AuthError
	isAuth := errors.As(ev.err, &ae)
	if ev.shard < 0 {
		switch {
		case isAuth:
			res.Refused = append(res.Refused, fmt.Sprintf("peer %s refused: %v", ev.addr, ae))
			if co.cfg.Refused != nil {
				co.cfg.Refused(ev.addr, ae)
			}
		default:
			if res.Noise++; res.Noise <= maxNoiseNoted && co.cfg.Noise != nil {
				co.cfg.Noise(ev.addr, ev.err)
			}
		}
		return
	}
	if ev.shard >= len(conns) || conns[ev.shard] != ev.c || !live[ev.shard] {
		return
	}
	if isAuth {
		res.Refused = append(res.Refused, fmt.Sprintf("shard %d at %s refused: %v", ev.shard, ev.addr, ae))
	}
	live[ev.shard] = false
	if !handedIn[ev.shard] {
		res.Lost = append(res.Lost, ev.shard)
		if co.cfg.Lost != nil {
			co.cfg.Lost(ev.shard, co.lostWhy(ev.addr, ev.err))
		}
	} else if isAuth && co.cfg.Refused != nil {
		// Its part is in, so it is no loss, but the run was tampered with.
		co.cfg.Refused(ev.addr, ae)
	}
	open()
}

// check returns why a hello does not belong to the run, or "".
func (co *Coordinator) check(h *Hello, conns []*conn) string {
	want := co.cfg.Hello
	switch {
	case h == nil:
		return "a hello without its fields"
	case h.Protocol != want.Protocol:
		return fmt.Sprintf("shard %d speaks coordinator protocol %d, the coordinator %d", h.Shard, h.Protocol, want.Protocol)
	case h.N != want.N:
		return fmt.Sprintf("shard %d/%d joined a run of %d shards", h.Shard, h.N, want.N)
	case h.Shard < 0 || h.Shard >= want.N:
		return fmt.Sprintf("shard %d is not one of the run's %d", h.Shard, want.N)
	case conns[h.Shard] != nil:
		return fmt.Sprintf("shard %d joined twice", h.Shard)
	case h.RunID != want.RunID:
		return fmt.Sprintf("shard %d has run id %q, the coordinator %q", h.Shard, h.RunID, want.RunID)
	case h.Broker != want.Broker:
		return fmt.Sprintf("shard %d connects to broker %s, the coordinator's run to %s: give every shard the same --broker (broker.url)", h.Shard, h.Broker, want.Broker)
	case h.PlanSHA256 != want.PlanSHA256:
		return fmt.Sprintf("shard %d runs another plan (sha256 %s, the coordinator's %s): give every shard the same plan and --set flags", h.Shard, h.PlanSHA256, want.PlanSHA256)
	case h.AssignSHA256 != want.AssignSHA256:
		return fmt.Sprintf("shard %d splits the clients otherwise (assignment %s, the coordinator's %s)", h.Shard, h.AssignSHA256, want.AssignSHA256)
	case h.Version != want.Version:
		return fmt.Sprintf("shard %d is mqplan %s, the coordinator %s: run one build everywhere", h.Shard, h.Version, want.Version)
	}
	return ""
}

// accept admits connections until done, each read on its own goroutine.
func (co *Coordinator) accept(events chan<- event, done <-chan struct{}) {
	for {
		nc, err := co.ln.Accept()
		if err != nil {
			return
		}
		go co.serveConn(newConn(nc, co.cfg.Idle), events, done)
	}
}

// serveConn authenticates one connection (handshake) and reads its
// frames: it answers pings itself (so that the coordinator's loop adds no
// delay to a clock sample) and passes the rest on, tagged with the shard
// its hello named. A connection that fails the handshake is passed on as
// ended, shard -1, with why.
func (co *Coordinator) serveConn(c *conn, events chan<- event, done <-chan struct{}) {
	defer c.c.Close()
	addr := c.c.RemoteAddr().String()
	send := func(ev event) bool {
		ev.c, ev.addr = c, addr
		select {
		case events <- ev:
			return true
		case <-done:
			return false
		}
	}
	h, err := co.handshake(c)
	if err != nil {
		send(event{shard: -1, err: err})
		return
	}
	shard := h.Shard
	if !send(event{shard: shard, f: &frame{Type: tHello, Hello: h}}) {
		return
	}
	for {
		f, err := c.read()
		if err != nil {
			send(event{shard: shard, err: err})
			return
		}
		switch f.Type {
		case tBeat, tHello, tChallenge:
			continue
		case tPing:
			t1 := time.Now().UnixNano()
			_ = c.write(&frame{Type: tPong, T0: f.T0, T1: t1, T2: time.Now().UnixNano()})
			continue
		}
		if !send(event{shard: shard, f: f}) {
			return
		}
	}
}

// handshake challenges a new connection and checks its hello's proof of
// the secret (auth.go); on success the connection is sealed with the
// session key and its welcome's proof is ready. It returns an *AuthError
// for a peer that speaks the protocol but fails, a *noiseError for one
// that does not.
func (co *Coordinator) handshake(c *conn) (*Hello, error) {
	nc := newNonce()
	if err := c.write(&frame{Type: tChallenge, Nonce: nc, Protocol: Protocol}); err != nil {
		return nil, &noiseError{"the challenge could not be sent: " + err.Error()}
	}
	f, err := c.read()
	var ae *AuthError
	switch {
	case errors.As(err, &ae):
		return nil, err
	case err != nil:
		return nil, &noiseError{"no hello: " + err.Error()}
	case f.Type != tHello:
		return nil, &AuthError{Why: fmt.Sprintf("a %s frame before its hello", f.Type)}
	case f.Hello == nil:
		return nil, &AuthError{Why: "a hello without its fields"}
	}
	h := f.Hello
	refuse := func(why string) (*Hello, error) {
		ae := &AuthError{Why: why}
		_ = c.write(&frame{Type: tRefuse, Error: ae.Error()})
		return nil, ae
	}
	if h.Protocol != Protocol {
		return refuse(fmt.Sprintf("it speaks coordinator protocol %d, the coordinator %d: run one build everywhere", h.Protocol, Protocol))
	}
	if err := checkNonce("the shard", f.Nonce); err != nil {
		return refuse(err.(*AuthError).Why)
	}
	secret := co.cfg.Secret
	if !hmac.Equal(f.Proof, proof(secret, labelShard, f.Nonce, nc, h)) {
		switch {
		case h.Keyed && len(secret) == 0:
			return refuse("the shard has a secret, the coordinator none (--token-file)")
		case !h.Keyed && len(secret) > 0:
			return refuse("the shard has no secret: give it the run's (--token-file)")
		}
		return refuse("the shard's proof does not match the run's secret (another secret, or a replayed hello)")
	}
	c.keyed(sessionKey(secret, f.Nonce, nc), dirToShard)
	c.welcomeProof = proof(secret, labelCoordinator, f.Nonce, nc, h)
	return h, nil
}

// joinInts writes 3, 7 for [3 7].
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range slices.Sorted(slices.Values(ns)) {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
