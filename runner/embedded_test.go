package runner

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
)

// TestRunEmbedded: a plan whose broker is "embedded" runs against the
// broker Options.Embedded starts, reports that broker's URL and counters,
// and closes it; without Options.Embedded, or when it fails, Run refuses
// to start with an error that says why.
func TestRunEmbedded(t *testing.T) {
	var started *broker.Broker
	start := func() (EmbeddedBroker, error) {
		b, err := broker.Start(broker.Options{})
		if err != nil {
			return nil, err
		}
		started = b
		return b, nil
	}
	tests := []struct {
		name     string
		embedded func() (EmbeddedBroker, error)
		errHas   string // Run's error; "" for a run
	}{
		{name: "started, measured and closed", embedded: start},
		{name: "not provided", errHas: `the plan's broker is "embedded" but no embedded broker was provided`},
		{name: "failing to start", embedded: func() (EmbeddedBroker, error) { return nil, errors.New("no port") },
			errHas: "start embedded broker: no port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started = nil
			prog := compile(t, e2ePlan(2, 1, 300*time.Millisecond))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, err := Run(ctx, prog, Options{Embedded: tt.embedded})
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("Run error %v, want one containing %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if started == nil {
				t.Fatal("Options.Embedded was not called")
			}
			if st.BrokerURL != started.URL() {
				t.Errorf("BrokerURL %q, want the embedded broker's %q", st.BrokerURL, started.URL())
			}
			m := all(st)
			if st.Incomplete != "" || m.Sent == 0 || m.Received != m.Sent {
				t.Fatalf("incomplete %q sent %d received %d (errors %v)", st.Incomplete, m.Sent, m.Received, st.ErrorSamples)
			}
			if st.Broker == nil || st.Broker.MessagesReceived != m.Sent || st.Broker.MessagesSent != m.Received {
				t.Errorf("Stats.Broker %+v, want the broker's counts of %d sent and %d received", st.Broker, m.Sent, m.Received)
			}
			// Run closed it: a second Close returns the first one's result
			// at once, and nothing listens any more.
			if err := started.Close(time.Second); err != nil {
				t.Errorf("the run's Close failed: %v", err)
			}
			if c, err := net.DialTimeout("tcp", started.Addr(), time.Second); err == nil {
				c.Close()
				t.Errorf("the embedded broker still listens on %s after the run", started.Addr())
			}
		})
	}
}
