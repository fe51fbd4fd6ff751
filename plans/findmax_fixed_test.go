package plans

import (
	"fmt"
	"strings"
	"testing"
)

func TestFixedBounds(t *testing.T) {
	tests := []struct {
		name, knob string
		thresholds []string
		// want are the fixed bounds found, each "index|comparison|relative".
		want []string
	}{
		{name: "a receive rate against the plan's rate", thresholds: []string{"p99 < 50ms", "groups.sub.recv_rate >= 95"},
			want: []string{"1|groups.sub.recv_rate >= 95|groups.sub.recv_rate >= groups.pub.send_rate * 0.95"}},
		{name: "number first is read from the metric's side", thresholds: []string{"190 <= recv_rate"},
			want: []string{"0|190 <= recv_rate|recv_rate >= groups.pub.send_rate * 1.9"}},
		{name: "counts have no relative form", thresholds: []string{"sent > 1000 and loss_rate == 0"},
			want: []string{"0|sent > 1000|"}},
		{name: "a client-count knob", knob: "groups.sub.count", thresholds: []string{"connect.ok >= 20"},
			want: []string{"0|connect.ok >= 20|"}},
		{name: "relative and zero bounds scale", thresholds: []string{
			"groups.sub.recv_rate >= groups.pub.send_rate * 0.99", "connect.failed == 0", "sent > 0", "connect.ok >= 1",
			"errors < 10", "lost <= 5", "broker.cpu.max < 90", "p99 < 50ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := knobPlan + "thresholds:\n"
			for _, th := range tt.thresholds {
				src += fmt.Sprintf("  - %q\n", th)
			}
			p, err := LoadBytes("k.yaml", []byte(src), LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			k, err := ParseKnob(tt.knob, p)
			if err != nil {
				t.Fatal(err)
			}
			prog, err := Compile(p, CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range k.FixedBounds(p, prog.Thresholds) {
				if f.Expr != tt.thresholds[f.Index] || f.Pos.Line == 0 {
					t.Errorf("bound %+v: want the expression of thresholds[%d] and its position", f, f.Index)
				}
				got = append(got, fmt.Sprintf("%d|%s|%s", f.Index, f.Bound.Text, f.Relative))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
