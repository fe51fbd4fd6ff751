// Package broker is mqplan's embedded MQTT broker: mochi-mqtt v2.7.9 run
// in-process for self-tests, demos (mqplan broker) and plans whose broker
// URL is "embedded". It owns the broker's configuration for load tests
// (capabilities raised so that the broker itself drops nothing), its TCP
// listener, its workarounds for mochi v2.7.9 defects (the send quota that
// stalls a subscriber, see sendQuotaHook; the Close that deadlocks or
// hangs, see Broker.Close; the race on retained messages, see
// retainLockHook), and fault injection (Faults: dropped, duplicated and
// delayed deliveries with exact counts) that lets mqplan's accounting be
// tested against known truth.
//
// It must not know about plans, schedules or the runner: it is started with
// Options and read through Stats, FaultCounts and DelayHeld, and whoever
// runs a plan against it (runner.Run, through runner.Options.Embedded)
// only sees its URL and counters. Outside tests, it is the only package of
// mqplan that imports mochi.
package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"

	"github.com/mqplan/mqplan/stats"
)

// defaultListen is the address the embedded broker binds when
// Options.Listen is empty: loopback, with a port chosen by the kernel,
// so that a self-test never exposes a broker that accepts every client
// (auth.AllowHook) to the network by accident.
const defaultListen = "127.0.0.1:0"

// tcpListenerID names the embedded broker's only listener inside mochi.
const tcpListenerID = "mqplan-tcp"

// Options configures the embedded broker.
type Options struct {
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
	// SysInterval, when set, is how often the broker refreshes its $SYS
	// topics (whole seconds, at least one). Zero means once a minute: each
	// refresh stops the world of the process that measures latency (see
	// start), so only a plan that reads $SYS (broker.metrics.sys) asks for
	// every second.
	SysInterval time.Duration
	// MinimumProtocol, when set (3, 4 or 5: MQTT 3.1, 3.1.1, 5), refuses
	// clients speaking an older version with CONNACK "unsupported protocol
	// version". Zero accepts all three. Tests use it to see mqplan report a
	// broker that refuses the plan's protocol.
	MinimumProtocol byte
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
// Start and stop it with Close.
type Broker struct {
	srv    *mqtt.Server
	ln     *listener
	faults *faultHook // nil when Faults is zero
	ws     string     // WebSocket listen address, "" for none
	stop   chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// Start starts an embedded broker and returns once it is accepting
// connections: mochi binds the socket when the listener is added, so Addr
// reports the real port even for "127.0.0.1:0".
func Start(opts Options) (*Broker, error) {
	return start(opts, true)
}

// start is Start with the send-quota workaround optional, so that a test
// can show the mochi bug it works around still exists.
func start(opts Options, quotaWorkaround bool) (*Broker, error) {
	if err := opts.Faults.validate(); err != nil {
		return nil, err
	}
	addr := opts.Listen
	if addr == "" {
		addr = defaultListen
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}

	caps := capabilities()
	if q := opts.MaximumQoS; q != nil {
		if *q > 2 {
			return nil, fmt.Errorf("maximum QoS %d: must be 0, 1 or 2", *q)
		}
		caps.MaximumQos = *q
	}
	if p := opts.MinimumProtocol; p != 0 {
		if p < 3 || p > 5 {
			return nil, fmt.Errorf("minimum protocol %d: must be 3, 4 or 5", p)
		}
		caps.MinimumProtocolVersion = p
	}
	mo := &mqtt.Options{
		Capabilities: caps,
		Logger:       logger,
		// $SYS topics are refreshed once a minute instead of every second:
		// each refresh calls runtime.ReadMemStats, which stops the world
		// inside the very process that measures latency, and mqplan reads
		// the counters it needs from server.Info directly.
		SysTopicResendInterval: sysInterval(opts.SysInterval),
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
		ln:   &listener{id: tcpListenerID, address: addr, tls: opts.TLS, conns: map[net.Conn]struct{}{}},
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

// capabilities returns mochi's capabilities raised for load tests. The
// targets are a 1-to-1 QoS 1 run of 200 publisher/subscriber pairs at
// 20,000 msg/s in total and a fan-out to 1,000 subscribers, with nothing
// dropped by the broker: every broker drop would look like mqplan losing
// messages (Stats reports them separately so that it never does).
func capabilities() *mqtt.Capabilities {
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
// Options.Faults are not in these counters (see FaultCounts):
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
// when Options.Faults is zero, since no hook is installed then.
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

// sysInterval is mochi's $SYS refresh interval in seconds for d (zero:
// once a minute).
func sysInterval(d time.Duration) int64 {
	if d <= 0 {
		return 60
	}
	return max(1, int64(d/time.Second))
}
