package broker

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/mochi-mqtt/server/v2/listeners"
)

// listener is mochi's TCP listener with four changes. It remembers
// every accepted connection, so that connections mochi does not know about
// (no CONNECT yet) can be closed at shutdown and any connection can be
// forced shut when the shutdown hangs. It closes the listening socket before
// disconnecting clients, so no connection is accepted after the clients
// were told to go (mochi's listener does it the other way round). And a
// temporary Accept error (EMFILE at 20,000 files) pauses accepting instead
// of stopping it for good. And it disconnects its clients with
// Broker.disconnectClients, not with mochi's deadlock-prone CloseFn.
type listener struct {
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
func (l *listener) ID() string { return l.id }

// Protocol implements listeners.Listener.
func (l *listener) Protocol() string { return "tcp" }

// Address returns the bound address once Init has run.
func (l *listener) Address() string {
	if l.ln != nil {
		return l.ln.Addr().String()
	}
	return l.address
}

// Init binds the socket; mochi calls it from AddListener.
func (l *listener) Init(log *slog.Logger) error {
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
func (l *listener) Serve(establish listeners.EstablishFn) {
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
func (l *listener) Close(listeners.CloseFn) {
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

func (l *listener) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

func (l *listener) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.conns[c] = struct{}{}
	l.wg.Add(1)
	return true
}

func (l *listener) untrack(c net.Conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
	l.wg.Done()
}

// closeConns closes every connection still open, which makes mochi's
// blocked reads and writes on them return.
func (l *listener) closeConns() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		_ = c.Close()
	}
}
