package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

// TestCSVRows pins the CSV timeline's rules row by row: a total row then
// one per group for each second, rates over the second's real length,
// empty cells (never 0) for figures without samples, and names that
// could be formulas defused.
func TestCSVRows(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		timeline []stats.Second
		want     []string // rows after the header, joined by commas
	}{
		{
			name: "no timeline: the header alone",
		},
		{
			name:     "a second kept without groups has its total row only",
			timeline: []stats.Second{{At: time.Second, Phase: phase.Connect, Connected: 2}},
			want:     []string{"1.000,connect,total,0,0,0.0,0.0,,,,2,0,0,,,,,,,,,,,,,,"},
		},
		{
			name: "groups follow the total, and the last, short second's rates are per second",
			timeline: []stats.Second{
				{At: time.Second, Phase: phase.Steady, Connected: 2, Sent: 100, Received: 100, P50: ms, P99: 2 * ms, Max: 3 * ms, LagMax: 250 * time.Microsecond,
					Groups: []stats.GroupSecond{
						{Group: "sub", Connected: 1, Received: 100, P50: ms, P99: 2 * ms, Max: 3 * ms},
						{Group: "pub", Connected: 1, Sent: 100, LagMax: 250 * time.Microsecond},
					}},
				{At: 1250 * ms, Phase: phase.Drain, Connected: 1, Lost: 1, Received: 10, P50: ms, P99: ms, Max: ms, Errors: 1, Disconnects: 1,
					Groups: []stats.GroupSecond{
						{Group: "sub", Connected: 1, Received: 10, P50: ms, P99: ms, Max: ms},
						{Group: "pub", Lost: 1, Errors: 1, Disconnects: 1},
					}},
			},
			want: []string{
				"1.000,steady,total,100,100,100.0,100.0,1.000,2.000,3.000,2,0,0,0.250,,,,,,,,,,,,,",
				"1.000,steady,sub,0,100,0.0,100.0,1.000,2.000,3.000,1,0,0,,,,,,,,,,,,,,",
				"1.000,steady,pub,100,0,100.0,0.0,,,,1,0,0,0.250,,,,,,,,,,,,,",
				"1.250,drain,total,0,10,0.0,40.0,1.000,1.000,1.000,1,1,1,,,,,,,,,,,,,,",
				"1.250,drain,sub,0,10,0.0,40.0,1.000,1.000,1.000,1,0,0,,,,,,,,,,,,,,",
				"1.250,drain,pub,0,0,0.0,0.0,,,,0,1,1,,,,,,,,,,,,,,",
			},
		},
		{
			name: "a lag of 0 measured is 0, deliveries without a latency have none",
			timeline: []stats.Second{{At: time.Second, Phase: phase.Drain, Sent: 1, Received: 2,
				Groups: []stats.GroupSecond{{Group: "g", Sent: 1, Received: 2}}}},
			want: []string{
				"1.000,drain,total,1,2,1.0,2.0,,,,0,0,0,0.000,,,,,,,,,,,,,",
				"1.000,drain,g,1,2,1.0,2.0,,,,0,0,0,0.000,,,,,,,,,,,,,",
			},
		},
		{
			name: "the processes' figures: on the total row, in a second they were sampled",
			timeline: []stats.Second{
				{At: time.Second, Phase: phase.Steady,
					Broker: stats.ProcSample{Sampled: true, CPU: 12.345, RSS: 5 << 20}, Self: stats.ProcSample{Sampled: true, CPU: 0, RSS: 30 << 20},
					Groups: []stats.GroupSecond{{Group: "g"}}},
				{At: 2 * time.Second, Phase: phase.Steady, Self: stats.ProcSample{Sampled: true, CPU: 150, RSS: 31 << 20},
					Groups: []stats.GroupSecond{{Group: "g"}}},
				{At: 3 * time.Second, Phase: phase.Drain, Groups: []stats.GroupSecond{{Group: "g"}}},
			},
			want: []string{
				"1.000,steady,total,0,0,0.0,0.0,,,,0,0,0,,12.3,5242880,0.0,31457280,,,,,,,,,",
				"1.000,steady,g,0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,,,",
				"2.000,steady,total,0,0,0.0,0.0,,,,0,0,0,,,,150.0,32505856,,,,,,,,,",
				"2.000,steady,g,0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,,,",
				"3.000,drain,total,0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,,,",
				"3.000,drain,g,0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,,,",
			},
		},
		{
			name: "the broker's own counters: on the total row, as last reported, empty where not reported",
			timeline: []stats.Second{
				{At: time.Second, Phase: phase.Steady, Counters: counters(map[brokerstat.Counter]int64{
					brokerstat.Clients: 3, brokerstat.PublishReceived: 10, brokerstat.PublishSent: 20, brokerstat.Dropped: 0,
					brokerstat.MemoryBytes: 1 << 20, brokerstat.Subscriptions: 2}),
					Groups: []stats.GroupSecond{{Group: "g"}}},
				{At: 2 * time.Second, Phase: phase.Steady, Counters: counters(map[brokerstat.Counter]int64{brokerstat.PublishSent: 25}),
					Groups: []stats.GroupSecond{{Group: "g"}}},
			},
			want: []string{
				"1.000,steady,total,0,0,0.0,0.0,,,,0,0,0,,,,,,3,10,20,0,1048576,2,,,",
				"1.000,steady,g,0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,,,",
				"2.000,steady,total,0,0,0.0,0.0,,,,0,0,0,,,,,,,,25,,,,,,",
				"2.000,steady,g,0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,,,",
			},
		},
		{
			name: "mqplan's disturbance: on the total row, in a second it was measured",
			timeline: []stats.Second{
				{At: time.Second, Phase: phase.Steady, Gen: stats.GenSecond{Sampled: true, Wait: 250 * time.Millisecond, Busy: 0.5, Pressure: 400 * time.Millisecond, HasPressure: true},
					Groups: []stats.GroupSecond{{Group: "g"}}},
				{At: 2 * time.Second, Phase: phase.Steady, Gen: stats.GenSecond{Sampled: true, Wait: 1500 * time.Microsecond, Busy: 0.125}},
			},
			want: []string{
				"1.000,steady,total,0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,250.000,0.500,400.000",
				"1.000,steady,g,0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,,,",
				"2.000,steady,total,0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,1.500,0.125,",
			},
		},
		{
			name:     "a second of no length has no rates",
			timeline: []stats.Second{{At: 0, Phase: phase.Connect}},
			want:     []string{"0.000,connect,total,0,0,,,,,,0,0,0,,,,,,,,,,,,,,"},
		},
		{
			name: "names that a spreadsheet would take for a formula",
			timeline: []stats.Second{{At: time.Second, Phase: phase.Steady, Groups: []stats.GroupSecond{
				{Group: "-pub"}, {Group: "-2-3"}, {Group: "=HYPERLINK(\"http://x\")"}, {Group: "@SUM(A1)"}, {Group: "+1+1"}, {Group: "-cmd|' /C calc'!A0"},
			}}},
			want: []string{
				"1.000,steady,total,0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,,,",
				"1.000,steady,'-pub,0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,,,",
				"1.000,steady,'-2-3,0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,,,",
				`1.000,steady,"'=HYPERLINK(""http://x"")",0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,,,`,
				"1.000,steady,'@SUM(A1),0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,,,",
				"1.000,steady,'+1+1,0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,,,",
				"1.000,steady,'-cmd|' /C calc'!A0,0,0,0.0,0.0,,,,0,0,0,,,,,,,,,,,,,,",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteCSV(&b, &Result{Timeline: tt.timeline}); err != nil {
				t.Fatal(err)
			}
			want := strings.Join(append([]string{strings.Join(csvHeader, ",")}, tt.want...), "\n") + "\n"
			if got := b.String(); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			// Every row parses back with as many fields as the header.
			rows, err := csv.NewReader(&b).ReadAll()
			if err != nil {
				t.Fatalf("the CSV does not parse: %v", err)
			}
			if len(rows) != 1+len(tt.want) {
				t.Errorf("%d rows parsed, want %d", len(rows), 1+len(tt.want))
			}
		})
	}
}
