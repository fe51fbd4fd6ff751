package emqttbench

import (
	"bytes"
	"testing"
	"time"

	"github.com/mqplan/mqplan/runner"
)

// TestProgress checks the per-second lines made from the runner's
// progress: the runner's totals and rates, a line only when the count moved.
func TestProgress(t *testing.T) {
	s := time.Second
	tests := []struct {
		name  string
		kind  Kind
		steps []runner.Progress
		want  string
	}{
		{name: "sub", kind: Sub, steps: []runner.Progress{
			{Elapsed: 1 * s}, {Elapsed: 2 * s, RecvRate: 100, Received: 100}, {Elapsed: 3 * s, RecvRate: 50, Received: 150},
			{Elapsed: 4 * s, Received: 150}, {Elapsed: 4*s + s/4, RecvRate: 40, Received: 160},
		}, want: "recv(2s): total=100, rate=100(msg/sec)\nrecv(3s): total=150, rate=50(msg/sec)\nrecv(4s): total=160, rate=40(msg/sec)\n"},
		{name: "pub", kind: Pub, steps: []runner.Progress{
			{Elapsed: 1 * s, SendRate: 20, RecvRate: 7, Sent: 20}, {Elapsed: 2 * s, SendRate: 20, Sent: 40},
		}, want: "sent(1s): total=20, rate=20(msg/sec)\nsent(2s): total=40, rate=20(msg/sec)\n"},
		{name: "pub: the final snapshot does not print its second again", kind: Pub, steps: []runner.Progress{
			{Elapsed: 1 * s, SendRate: 99, Sent: 99}, {Elapsed: s + s/50, SendRate: 44, Sent: 100},
		}, want: "sent(1s): total=99, rate=99(msg/sec)\n"},
		{name: "conn", kind: Conn, steps: []runner.Progress{
			{Elapsed: 1 * s, Connected: 3}, {Elapsed: 2 * s, Connected: 5}, {Elapsed: 3 * s, Connected: 5}, {Elapsed: 4 * s, Connected: 4},
		}, want: "connected(1s): total=3, rate=3(conn/sec)\nconnected(2s): total=5, rate=2(conn/sec)\nconnected(4s): total=4, rate=-1(conn/sec)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			p := NewProgress(&b, nil, tt.kind)
			for _, st := range tt.steps {
				p.Update(st)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}
