package broker

import (
	"fmt"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Close stops the broker within timeout and is safe to call more than once
// (later calls return the first call's result). mochi's own Close can hang
// (mochi-mqtt/server#424): it waits for every connection goroutine, and one
// that never sent CONNECT, or whose socket is full while mochi writes the
// DISCONNECT, never ends. The broker's listener closes the connections that
// never sent CONNECT itself (see listener.Close), and disconnects the
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
func (b *Broker) disconnectClients(listenerID string) {
	for _, cl := range b.srv.Clients.GetAll() {
		if cl.Net.Listener == listenerID && !cl.Closed() {
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
