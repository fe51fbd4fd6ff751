package threshold

import (
	"reflect"
	"testing"

	"github.com/mqplan/mqplan/metric"
)

func TestBounds(t *testing.T) {
	env := NewEnv(Scopes{Groups: []string{"sub", "pub"}})
	tests := []struct {
		name string
		expr string
		want []Bound
	}{
		{"a rate against a number", "groups.sub.recv_rate >= 190",
			[]Bound{{Ref: Ref{Scope: Groups, Name: "sub", Metric: metric.RecvRate}, Value: 190, Op: ">=", Text: "groups.sub.recv_rate >= 190"}}},
		{"number first", "10000 < sent", []Bound{{Ref: Ref{Metric: metric.Sent}, Value: 10000, Op: ">", Text: "10000 < sent"}}},
		{"within a conjunction", "p99 < 50ms and received > 1.5",
			[]Bound{{Ref: Ref{Metric: metric.Received}, Value: 1.5, Op: ">", Text: "received > 1.5"}}},
		{"negative", "send_rate > -1", []Bound{{Ref: Ref{Metric: metric.SendRate}, Value: -1, Op: ">", Text: "send_rate > -1"}}},
		{"two metrics are relative", "groups.sub.recv_rate >= groups.pub.send_rate * 0.99", nil},
		{"computed side", "sent / 2 > 10", nil},
		{"duration", "p99 < 50ms", nil},
		{"baseline", "sent >= baseline.sent", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, err := env.Compile(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			if got := th.Bounds(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Bounds() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
