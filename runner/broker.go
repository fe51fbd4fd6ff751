package runner

import (
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/mqplan/mqplan/stats"
	"log/slog"
	"math"
	"net"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// defaultBrokerListen is the address the embedded broker binds when
// BrokerOptions.Listen is empty: loopback, with a port chosen by the kernel,
// so that a self-test never exposes a broker that accepts every client
// (auth.AllowHook) to the network by accident.
const defaultBrokerListen = "127.0.0.1:0"

// brokerListenerID names the embedded broker's only listener inside mochi.
const brokerListenerID = "mqplan-tcp"

// BrokerOptions configures the embedded broker.
type BrokerOptions struct {
	// Listen is the TCP address to bind, host:port. Empty means
	// 127.0.0.1:0, a free loopback port. Any host is
	// allowed, but remember the broker lets every client in: bind a public
	// address only on purpose.
	Listen string
	// Logger receives mochi's logs. Nil discards them: mochi would otherwise
	// log to stdout and corrupt mqplan's summary table.
	Logger *slog.Logger
	// Faults injects broker-side misbehaviour (loss, duplicates, delay) so
	// that mqplan's own accounting can be tested against known truth. The
	// zero value injects nothing and installs no hook at all.
	Faults Faults
	// TLS, when set, makes the TCP listener (and the WebSocket one) speak
	// TLS; with ClientAuth set to require a certificate it is mutual TLS.
	TLS *tls.Config
	// WebSocket, when set, is the address of a WebSocket listener (path
	// /mqtt, or any path: mochi accepts the upgrade on every path).
	WebSocket string
	// Users, when non-nil, replaces allow-all with password authentication:
	// user name → password. A client whose CONNECT does not match is refused.
	Users map[string]string
	// MaximumQoS, when set, caps the QoS the broker grants and accepts
	// (0 or 1): subscriptions asking more are granted this, and publishes
	// at a higher QoS are taken and acknowledged at it, as RabbitMQ does
	// with QoS 2. Nil means 2, no cap. Tests use it to see mqplan report
	// the downgrades.
	MaximumQoS *byte
	// Hooks are extra mochi hooks (tests, instrumentation), added after the
	// built-in ones (allow-all auth, the send-quota workaround, faults), so
	// they see packets as the fault hook left them.
	Hooks []mqtt.Hook
}

// Broker is an in-process mochi-mqtt broker listening on one TCP address,
// configured for load tests: it accepts every client, never logs to stdout,
// has queues and inflight stores large enough that it does not drop
// messages under the loads mqplan generates on one machine, and works
// around mochi v2.7.9's send-quota bug (see sendQuotaHook). Create it with
// StartBroker and stop it with Close.
type Broker struct {
	srv    *mqtt.Server
	ln     *brokerListener
	faults *faultHook // nil when Faults is zero
	ws     string     // WebSocket listen address, "" for none
	stop   chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// StartBroker starts an embedded broker and returns once it is accepting
// connections: mochi binds the socket when the listener is added, so Addr
// reports the real port even for "127.0.0.1:0".
func StartBroker(opts BrokerOptions) (*Broker, error) {
	return startBroker(opts, true)
}

// startBroker is StartBroker with the send-quota workaround optional, so
// that a test can show the mochi bug it works around still exists.
func startBroker(opts BrokerOptions, quotaWorkaround bool) (*Broker, error) {
	if err := opts.Faults.validate(); err != nil {
		return nil, err
	}
	addr := opts.Listen
	if addr == "" {
		addr = defaultBrokerListen
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}

	caps := brokerCapabilities()
	if q := opts.MaximumQoS; q != nil {
		if *q > 2 {
			return nil, fmt.Errorf("maximum QoS %d: must be 0, 1 or 2", *q)
		}
		caps.MaximumQos = *q
	}
	mo := &mqtt.Options{
		Capabilities: caps,
		Logger:       logger,
		// $SYS topics are refreshed once a minute instead of every second:
		// each refresh calls runtime.ReadMemStats, which stops the world
		// inside the very process that measures latency, and mqplan reads
		// the counters it needs from server.Info directly.
		SysTopicResendInterval: 60,
		// ClientNetWriteBufferSize and ClientNetReadBufferSize keep mochi's
		// 2 KiB defaults: the read buffer is allocated per connection up
		// front (10,000 clients would pin 160 MiB at 16 KiB), and the write
		// buffer only coalesces packets while a client's queue is non-empty.
	}
	if opts.Faults.needsUnbufferedWrites() {
		// mochi coalesces a client's writes while its outbound queue is
		// non-empty and flushes them at the next successful write. The fault
		// hook drops or defers a delivery by making its write fail, which
		// would strand the bytes already coalesced before it until some
		// later write (possibly never, at the end of a test). A size of 1
		// makes every packet go to the socket at once; that costs a syscall
		// per packet, which only self-tests with faults pay.
		mo.ClientNetWriteBufferSize = 1
	}

	b := &Broker{
		srv:  mqtt.New(mo),
		ln:   &brokerListener{id: brokerListenerID, address: addr, tls: opts.TLS, conns: map[net.Conn]struct{}{}},
		stop: make(chan struct{}),
	}
	b.ln.disconnectClients = b.disconnectClients

	// mochi refuses every client unless some hook says yes.
	var authHook mqtt.Hook = new(auth.AllowHook)
	var authConfig any
	if opts.Users != nil {
		rules := auth.AuthRules{}
		for u, p := range opts.Users {
			rules = append(rules, auth.AuthRule{Username: auth.RString(u), Password: auth.RString(p), Allow: true})
		}
		authHook, authConfig = new(auth.Hook), &auth.Options{Ledger: &auth.Ledger{Auth: rules}}
	}
	if err := b.srv.AddHook(authHook, authConfig); err != nil {
		return nil, fmt.Errorf("embedded broker: add hook %s: %w", authHook.ID(), err)
	}
	var hooks []mqtt.Hook
	if quotaWorkaround {
		hooks = append(hooks, new(sendQuotaHook))
	}
	if opts.Faults.enabled() {
		b.faults = newFaultHook(opts.Faults, b.srv.Info, b.stop)
		hooks = append(hooks, b.faults)
	}
	hooks = append(hooks, opts.Hooks...)
	hooks = append(hooks, newRetainLockHook()) // last: see its comment
	for _, h := range hooks {
		if h == nil {
			continue
		}
		if err := b.srv.AddHook(h, nil); err != nil {
			return nil, fmt.Errorf("embedded broker: add hook %s: %w", h.ID(), err)
		}
	}

	if err := b.srv.AddListener(b.ln); err != nil { // binds the socket
		return nil, fmt.Errorf("embedded broker: listen on %s: %w", addr, err)
	}
	if opts.WebSocket != "" {
		// mochi's WebSocket listener cannot report a port the kernel
		// picked, so port 0 is resolved to a free port here.
		addr, err := concretePort(opts.WebSocket)
		if err != nil {
			return nil, fmt.Errorf("embedded broker: WebSocket listener on %s: %w", opts.WebSocket, err)
		}
		b.ws = addr
		ws := listeners.NewWebsocket(listeners.Config{ID: "mqplan-ws", Address: addr, TLSConfig: opts.TLS})
		if err := b.srv.AddListener(safeCloseListener{ws, b.disconnectClients}); err != nil {
			return nil, fmt.Errorf("embedded broker: WebSocket listener on %s: %w", opts.WebSocket, err)
		}
	}
	if err := b.srv.Serve(); err != nil { // does not block
		_ = b.Close(time.Second)
		return nil, fmt.Errorf("embedded broker: serve: %w", err)
	}
	if b.ws != "" {
		// mochi's WebSocket listener binds in its serving goroutine: wait
		// until it accepts, so that the first client is not refused.
		deadline := time.Now().Add(5 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", b.ws, time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				_ = b.Close(time.Second)
				return nil, fmt.Errorf("embedded broker: WebSocket listener on %s: %w", b.ws, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return b, nil
}

// concretePort returns addr with port 0 replaced by a port that is free now.
func concretePort(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if port != "0" {
		return addr, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// brokerCapabilities returns mochi's capabilities raised for load tests. The
// targets are a 1-to-1 QoS 1 run of 200 publisher/subscriber pairs at
// 20,000 msg/s in total and a fan-out to 1,000 subscribers, with nothing
// dropped by the broker: every broker drop would look like mqplan losing
// messages (Stats reports them separately so that it never does).
func brokerCapabilities() *mqtt.Capabilities {
	c := mqtt.NewDefaultServerCapabilities()

	// The per-client outbound queue (a buffered channel of packet pointers).
	// When it is full mochi drops the delivery silently and counts
	// MessagesDropped (which the report shows). It absorbs bursts while a
	// subscriber's writer is descheduled or blocked on a full socket; mqplan's
	// clients read and acknowledge as fast as packets arrive, so 2,048 slots
	// (2 s of a 1,000 msg/s stream to one subscriber) is ample. The buffer is
	// allocated at connect, 8 bytes a slot: measured here, 16,384 slots cost
	// 158 KiB of RSS per connection, which made the embedded broker
	// unusable for connection storms.
	c.MaximumClientWritesPending = 2048

	// QoS 1/2 messages stored per client, unacknowledged or queued. With the
	// send quota disabled (sendQuotaHook) a QoS 1/2 subscriber can have a
	// whole backlog outstanding, and above this limit mochi drops the
	// delivery and counts InflightDropped. 65,535 is the packet-identifier
	// space, the most that can be outstanding anyway; entries cost memory
	// only while they exist.
	c.MaximumInflight = math.MaxUint16

	// The Receive Maximum mochi announces in CONNACK: how many QoS 2
	// publishes a client may have unacknowledged towards the broker (QoS 1
	// releases its slot as soon as the PUBACK is written). A client that
	// exceeds it is disconnected, and mqplan's client (which caps its own
	// window at 256) waits when it is reached. Announcing the maximum
	// leaves the client's own window in charge and costs mochi nothing.
	c.ReceiveMaximum = math.MaxUint16

	// 0 = no broker-imposed message expiry. With the default (one day) mochi
	// stamps every delivery with an expiry, so every MQTT 5 PUBLISH carries
	// a Message Expiry Interval property mqplan did not ask for, and a soak
	// test running longer than the limit would see inflight QoS 1/2
	// messages and retained messages purged behind its back. Messages that
	// carry their own expiry still expire.
	c.MaximumMessageExpiryInterval = 0

	// Already unlimited by default, pinned here because a limit would turn
	// a connection ramp into refusals: MaximumClients (math.MaxInt64),
	// MaximumPacketSize (0 = none), MaximumQos 2.
	c.MaximumClients = math.MaxInt64
	c.MaximumPacketSize = 0
	c.MaximumQos = 2
	return c
}

// Addr returns the host:port the broker listens on, with the real port when
// it was started on port 0.
func (b *Broker) Addr() string { return b.ln.Address() }

// URL returns the broker's address as an mqtt:// URL for plans and clients.
func (b *Broker) URL() string {
	if b.ln.tls != nil {
		return "mqtts://" + b.Addr()
	}
	return "mqtt://" + b.Addr()
}

// WebSocketURL is the WebSocket listener's URL ("" when there is none).
func (b *Broker) WebSocketURL() string {
	if b.ws == "" {
		return ""
	}
	scheme := "ws://"
	if b.ln.tls != nil {
		scheme = "wss://"
	}
	return scheme + b.ws + "/mqtt"
}

// Stats returns mochi's own counters (server.Info). MessagesDropped and
// InflightDropped are deliveries the broker discarded because a client's
// outbound queue or inflight store was full; a run must report them, or the
// broker's losses look like mqplan's. Deliveries removed on purpose by
// BrokerOptions.Faults are not in these counters (see FaultCounts):
// MessagesSent counts PUBLISH packets actually written, so with faults it is
// FaultCounts.Deliveries - Dropped + Duplicated once everything is flushed.
func (b *Broker) Stats() stats.Broker {
	info := b.srv.Info
	return stats.Broker{
		MessagesReceived: atomic.LoadInt64(&info.MessagesReceived),
		MessagesSent:     atomic.LoadInt64(&info.MessagesSent),
		MessagesDropped:  atomic.LoadInt64(&info.MessagesDropped),
		InflightDropped:  atomic.LoadInt64(&info.InflightDropped),
		ClientsMaximum:   atomic.LoadInt64(&info.ClientsMaximum),
	}
}

// FaultCounts returns the fault hook's exact counters. They are all zero
// when BrokerOptions.Faults is zero, since no hook is installed then.
func (b *Broker) FaultCounts() FaultCounts {
	if b.faults == nil {
		return FaultCounts{}
	}
	return b.faults.counts()
}

// DelayHeld returns how long each delivery delayed by Faults.Delay was
// really held before it was written, in microseconds: Delay plus the
// lateness of the timer that released it. Nil without Delay.
func (b *Broker) DelayHeld() *hdrhistogram.Histogram {
	if b.faults == nil || b.faults.held == nil {
		return nil
	}
	return b.faults.heldTimes()
}

// Close stops the broker within timeout and is safe to call more than once
// (later calls return the first call's result). mochi's own Close can hang
// (mochi-mqtt/server#424): it waits for every connection goroutine, and one
// that never sent CONNECT, or whose socket is full while mochi writes the
// DISCONNECT, never ends. The broker's listener closes the connections that
// never sent CONNECT itself (see brokerListener.Close), and disconnects the
// others without mochi's lock-order deadlock (see disconnectClients); for
// the rest, Close gives mochi half the timeout, then closes every accepted
// socket, which unblocks any read or write stuck on it, and waits the other
// half. It returns an error only if mochi still has not returned, with
// every goroutine's stack; mochi's goroutines are then abandoned. A timeout
// <= 0 means 5 s.
func (b *Broker) Close(timeout time.Duration) error {
	b.closeOnce.Do(func() { b.closeErr = b.shutdown(timeout) })
	return b.closeErr
}

func (b *Broker) shutdown(timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	close(b.stop) // abandons deliveries still held by the Delay fault

	done := make(chan struct{})
	go func() {
		_ = b.srv.Close()
		close(done)
	}()

	grace := timeout / 2
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
	}
	b.ln.closeConns()
	t.Reset(timeout - grace)
	select {
	case <-done:
		return nil
	case <-t.C:
		// Say who holds it: without the stacks, a hang seen once in a CI
		// log cannot be diagnosed.
		return fmt.Errorf("embedded broker: not stopped after %v; goroutines:\n%s", timeout, goroutineStacks())
	}
}

// goroutineStacks returns every goroutine's stack, as a panic prints them.
func goroutineStacks() string {
	var sb strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&sb, 2); err != nil {
		return "(no stacks: " + err.Error() + ")"
	}
	return sb.String()
}

// disconnectClients sends DISCONNECT (server shutting down) to every client
// of one listener and stops it, as mochi's closeListenerClients does, but
// without its deadlock. mochi v2.7.9's Clients.GetByListener takes the
// client map's read lock and, holding it, calls Clients.Len, which takes the
// read lock again. sync.RWMutex forbids that: once a writer is waiting (a
// client connecting, Clients.Add, or one disconnecting, Clients.Delete),
// the second RLock waits for the writer and the writer for the first RLock,
// for ever. Close then hangs no matter which sockets are closed: this was
// the "not stopped after 30s" seen when clients disconnected just as a test
// closed the broker (TestBrokerCloseDoesNotDeadlock shows it). GetAll takes
// the read lock once and copies the map.
func (b *Broker) disconnectClients(listener string) {
	for _, cl := range b.srv.Clients.GetAll() {
		if cl.Net.Listener == listener && !cl.Closed() {
			_ = b.srv.DisconnectClient(cl, packets.ErrServerShuttingDown)
		}
	}
}

// safeCloseListener is a mochi listener whose Close disconnects its clients
// with Broker.disconnectClients instead of the CloseFn mochi passes (which
// can deadlock, see disconnectClients).
type safeCloseListener struct {
	listeners.Listener
	disconnectClients listeners.CloseFn
}

// Close implements listeners.Listener.
func (l safeCloseListener) Close(listeners.CloseFn) { l.Listener.Close(l.disconnectClients) }

// sendQuotaHook works around a bug in mochi v2.7.9's outbound flow control.
//
// ParseConnect sets a client's send quota to the Receive Maximum N it sent
// in CONNECT. Once N QoS 1/2 deliveries are unacknowledged, publishToClient
// parks further deliveries in the inflight store marked "send when quota
// frees" (Expiry -1). After each packet from the client, processPacket
// writes one parked delivery and then *deletes* it from the inflight store
// while spending a quota unit; that delivery's PUBACK then finds no inflight
// entry, so processPuback never gives the unit back. N parked deliveries
// later the quota is 0 for good: a subscriber with a backlog larger than N
// receives about 2N messages and then nothing (and the parked ones come
// out in arbitrary order, sorted by a uint16 of their creation second).
//
// ResetSendQuota(0) sets both the quota and its maximum to 0, exactly as for
// an MQTT 3.1.1 client (which sends no Receive Maximum): the parking branch
// requires maximumSendQuota > 0 and the release branch sendQuota > 0, so
// neither runs and every delivery goes straight to the client's outbound
// queue. A non-zero value (say 65535) would not do: the release branch would
// still scan and sort the whole inflight store after every PUBACK. The cost
// is that the broker ignores the subscriber's Receive Maximum
// ([MQTT-3.3.4-9]); mqplan's client tolerates that (it reads and
// acknowledges as fast as packets arrive), and any backlog waits in TCP
// buffers and in mochi's outbound queue (MaximumClientWritesPending).
//
// The quota is reset twice. OnSessionEstablish runs after ParseConnect and
// before the client is registered, so no delivery can be parked before it.
// But a session taken over from an earlier connection gets a cloned
// inflight store with the quota reset to N again (inheritClientSession), so
// OnSessionEstablished, after the takeover, resets it once more. A delivery
// parked in the short window between the resend of the inherited inflight
// messages and OnSessionEstablished would stay parked; mqplan's clients use
// clean sessions, which never take that path.
type sendQuotaHook struct {
	mqtt.HookBase
}

// ID names the hook in mochi's logs.
func (h *sendQuotaHook) ID() string { return "mqplan-send-quota" }

// Provides selects the two session hooks: the workaround costs nothing per
// message.
func (h *sendQuotaHook) Provides(b byte) bool {
	return b == mqtt.OnSessionEstablish || b == mqtt.OnSessionEstablished
}

// OnSessionEstablish disables the send quota of a new session before the
// client can receive anything.
func (h *sendQuotaHook) OnSessionEstablish(cl *mqtt.Client, _ packets.Packet) {
	cl.State.Inflight.ResetSendQuota(0)
}

// OnSessionEstablished disables it again after a session takeover replaced
// the inflight store.
func (h *sendQuotaHook) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	cl.State.Inflight.ResetSendQuota(0)
}

// brokerListener is mochi's TCP listener with four changes. It remembers
// every accepted connection, so that connections mochi does not know about
// (no CONNECT yet) can be closed at shutdown and any connection can be
// forced shut when the shutdown hangs. It closes the listening socket before
// disconnecting clients, so no connection is accepted after the clients
// were told to go (mochi's listener does it the other way round). And a
// temporary Accept error (EMFILE at 20,000 files) pauses accepting instead
// of stopping it for good. And it disconnects its clients with
// Broker.disconnectClients, not with mochi's deadlock-prone CloseFn.
type brokerListener struct {
	id      string
	address string
	tls     *tls.Config
	ln      net.Listener
	log     *slog.Logger
	// disconnectClients replaces the CloseFn mochi passes to Close.
	disconnectClients listeners.CloseFn

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup // one per tracked connection; Add under mu
}

// ID implements listeners.Listener.
func (l *brokerListener) ID() string { return l.id }

// Protocol implements listeners.Listener.
func (l *brokerListener) Protocol() string { return "tcp" }

// Address returns the bound address once Init has run.
func (l *brokerListener) Address() string {
	if l.ln != nil {
		return l.ln.Addr().String()
	}
	return l.address
}

// Init binds the socket; mochi calls it from AddListener.
func (l *brokerListener) Init(log *slog.Logger) error {
	l.log = log
	ln, err := net.Listen("tcp", l.address)
	if err != nil {
		return err
	}
	if l.tls != nil {
		ln = tls.NewListener(ln, l.tls)
	}
	l.ln = ln
	return nil
}

// Serve accepts connections until Close and hands each to mochi.
func (l *brokerListener) Serve(establish listeners.EstablishFn) {
	var backoff time.Duration
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || l.isClosed() {
				return
			}
			// Out of descriptors or similar: wait and retry, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			l.log.Warn("accept failed, retrying", "error", err, "in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if !l.track(c) {
			_ = c.Close()
			return
		}
		go func() {
			defer l.untrack(c)
			if err := establish(l.id, c); err != nil {
				l.log.Debug("connection ended", "error", err, "remote", c.RemoteAddr())
			}
		}()
	}
}

// Close stops accepting, disconnects the clients mochi knows (those that
// completed CONNECT; with disconnectClients, not mochi's CloseFn), closes
// the connections it does not know, and waits for every connection
// goroutine to return. mochi's Close calls it
// and then waits for its own count of connections (Listeners.ClientsWg);
// waiting here first means that wait cannot hang on a connection that never
// sent CONNECT, and that every connection's ClientsWg.Add happens before
// mochi's Wait (an Add racing with Wait is a misuse the race detector
// reports, and one mochi's own TCP listener allows).
func (l *brokerListener) Close(listeners.CloseFn) {
	l.mu.Lock()
	already := l.closed
	l.closed = true
	l.mu.Unlock()
	if already {
		return
	}
	if l.ln != nil {
		_ = l.ln.Close()
	}
	l.disconnectClients(l.id)
	l.closeConns()
	l.wg.Wait()
}

func (l *brokerListener) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

func (l *brokerListener) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.conns[c] = struct{}{}
	l.wg.Add(1)
	return true
}

func (l *brokerListener) untrack(c net.Conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
	l.wg.Done()
}

// closeConns closes every connection still open, which makes mochi's
// blocked reads and writes on them return.
func (l *brokerListener) closeConns() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		_ = c.Close()
	}
}

// errKickedByAdmin is why Kick drops a client.
var errKickedByAdmin = errors.New("disconnected by the broker's administrator")

// Kick drops, at once, every connected client whose id contains match,
// as an administrator's kick (or a crash of the client's broker node)
// would, and returns how many it dropped. Fault tests use it to see that
// mqplan reports clients that lose their connection.
func (b *Broker) Kick(match string) int {
	n := 0
	for _, cl := range b.srv.Clients.GetAll() {
		if strings.Contains(cl.ID, match) && !cl.Closed() {
			cl.Stop(errKickedByAdmin)
			n++
		}
	}
	return n
}
