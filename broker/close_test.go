package broker

import (
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
)

// TestBrokerCloseDoesNotDeadlock: disconnecting a listener's clients at
// Close must not deadlock against clients connecting or leaving at the same
// moment. mochi v2.7.9's own way (Clients.GetByListener, which takes the
// client map's read lock twice) does, and hung Broker.Close for good; the
// first case proves that bug still exists (if it fails, mochi was fixed and
// Broker.disconnectClients may go), the second that the workaround does
// not have it. A call that makes no progress for stall counts as deadlocked:
// one call takes microseconds.
func TestBrokerCloseDoesNotDeadlock(t *testing.T) {
	const (
		budget = 2 * time.Second // of calls racing with Add/Delete
		stall  = 2 * time.Second
	)
	cases := []struct {
		name         string
		disconnect   func(srv *mqtt.Server)
		wantDeadlock bool
	}{
		{"mochi bug: Clients.GetByListener deadlocks", func(srv *mqtt.Server) { srv.Clients.GetByListener(tcpListenerID) }, true},
		{"Broker.disconnectClients does not", func(srv *mqtt.Server) { (&Broker{srv: srv}).disconnectClients(tcpListenerID) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A server that never serves: its client map is all that is
			// used, and a deadlocked one is abandoned with nothing to close.
			srv := mqtt.New(&mqtt.Options{Logger: slog.New(slog.DiscardHandler)})
			stop := make(chan struct{})
			defer close(stop)
			go func() { // clients connecting and leaving, as at the end of a run
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					id := fmt.Sprintf("c%d", i%8)
					srv.Clients.Add(&mqtt.Client{ID: id})
					srv.Clients.Delete(id)
				}
			}()
			var calls atomic.Int64
			go func() {
				for start := time.Now(); time.Since(start) < budget; {
					tc.disconnect(srv)
					calls.Add(1)
				}
				calls.Store(-1) // done
			}()
			tick := time.NewTicker(stall)
			defer tick.Stop()
			last := int64(0)
			for range tick.C {
				n := calls.Load()
				if n == -1 {
					break
				}
				if n == last {
					if !tc.wantDeadlock {
						t.Fatalf("deadlocked after %d calls", n)
					}
					t.Logf("deadlocked after %d calls", n)
					return
				}
				last = n
			}
			if tc.wantDeadlock {
				t.Fatalf("no deadlock in %v: mochi's GetByListener seems fixed; revisit Broker.disconnectClients", budget)
			}
		})
	}
}

// TestBrokerCloseTimeoutNamesTheHolder: when Close gives up, its error
// carries every goroutine's stack, so that a hang seen once in CI names the
// goroutine that held it. Here a hook blocks in OnDisconnect, which mochi
// calls from the connection's goroutine, and Close waits for it in vain.
func TestBrokerCloseTimeoutNamesTheHolder(t *testing.T) {
	hold := &holdHook{release: make(chan struct{})}
	b, err := Start(Options{Hooks: []mqtt.Hook{hold}})
	if err != nil {
		t.Fatal(err)
	}
	// Released last: mochi's abandoned goroutines then end.
	t.Cleanup(func() { close(hold.release) })
	btConnect(t, b, "held", 64, nil)
	err = b.Close(time.Second)
	if err == nil {
		t.Fatal("Close returned nil while a connection goroutine was held")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "embedded broker: not stopped after 1s; goroutines:\n") ||
		!strings.Contains(msg, "(*holdHook).OnDisconnect") || !strings.Contains(msg, "(*Server).attachClient") {
		t.Errorf("Close error does not show the holder's stack:\n%.3000s", msg)
	}
}

// holdHook blocks every client's OnDisconnect until release is closed.
type holdHook struct {
	mqtt.HookBase
	release chan struct{}
}

func (h *holdHook) ID() string                             { return "test-hold" }
func (h *holdHook) Provides(b byte) bool                   { return b == mqtt.OnDisconnect }
func (h *holdHook) OnDisconnect(*mqtt.Client, error, bool) { <-h.release }
