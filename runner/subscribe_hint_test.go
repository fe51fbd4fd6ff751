package runner

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/mqplan/mqplan/plans"
)

// TestSubscribeFailure checks the error of a SUBSCRIBE that got no SUBACK:
// a connection the broker closed on a $share/... filter is named as the
// likely refusal of the shared subscription, with the setting to try
// named as the user wrote it; anything else keeps its plain error.
// (cmd/mqplan's TestEmqttSubShareClosed runs it against a listener that
// closes on SUBSCRIBE.)
func TestSubscribeFailure(t *testing.T) {
	eof := fmt.Errorf("read: %w", io.EOF)
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	tests := []struct {
		name     string
		protocol int
		option   string
		filters  []string
		err      error
		want     string
	}{
		{"3.1.1, shared, EOF: the hint, in the plan's words", 4, "", []string{"a/b", "$share/g/t/#"}, eof,
			"subscribe c1: the broker closed the connection on SUBSCRIBE $share/g/t/#: it may not accept shared subscriptions on MQTT 3.1.1; try broker.protocol: 5"},
		{"3.1.1, shared, EOF: the hint, in mqplan sub's words", 4, "-V", []string{"$share/g/t/#"}, io.EOF,
			"subscribe c1: the broker closed the connection on SUBSCRIBE $share/g/t/#: it may not accept shared subscriptions on MQTT 3.1.1; try -V 5"},
		{"3.1, shared, reset: the hint", 3, "-V", []string{"$share/g/t/#"}, reset,
			"subscribe c1: the broker closed the connection on SUBSCRIBE $share/g/t/#: it may not accept shared subscriptions on MQTT 3.1; try -V 5"},
		{"5, shared, EOF: no version to try", 5, "-V", []string{"$share/g/t/#"}, io.ErrUnexpectedEOF,
			"subscribe c1: the broker closed the connection on SUBSCRIBE $share/g/t/#: it may not accept shared subscriptions"},
		{"plain filter, EOF: plain", 4, "-V", []string{"t/#"}, io.EOF, "subscribe c1: EOF"},
		{"shared, another error: plain", 4, "-V", []string{"$share/g/t/#"}, errors.New("no packet from the broker for 5s"),
			"subscribe c1: no packet from the broker for 5s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &run{opts: Options{ProtocolOption: tt.option},
				prog: &plans.Program{Plan: &plans.Plan{Broker: plans.Broker{Protocol: tt.protocol}, Groups: []plans.Group{{Name: "sub"}}}}}
			pc := &plans.Client{ID: "c1"}
			for _, f := range tt.filters {
				pc.Subscriptions = append(pc.Subscriptions, plans.ClientSubscription{Filter: f})
			}
			if got := r.subscribeFailure(pc, tt.err).Error(); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
