package report

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/internal/golden"
	"github.com/mqplan/mqplan/plans"
)

// TestExplainShards pins explain --shards on the shipped plans whose
// assignment is the point (testdata/golden/report/shards-PLAN-N.txt;
// -update rewrites them): 1-to-1 pairs kept together (no delivery across
// shards), a fan-out and a fan-in split, a share group whole, idle
// clients striped, and the XMeter seed over 10 shards (the README's).
func TestExplainShards(t *testing.T) {
	tests := []struct {
		plan string
		n    []int
	}{
		{"1to1-qos1", []int{2, 8}},
		{"fanout-qos0", []int{2, 8}},
		{"fanin-qos1", []int{2, 8}},
		{"shared-sub", []int{2, 8}},
		{"conn-storm", []int{2, 8}},
		{"xmeter-100k", []int{10}},
	}
	for _, tt := range tests {
		data, err := fs.ReadFile(plans.Shipped, tt.plan+".yaml")
		if err != nil {
			t.Fatal(err)
		}
		p, err := plans.LoadBytes("plans/"+tt.plan+".yaml", data, plans.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		prog, err := plans.Compile(p, plans.CompileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range tt.n {
			t.Run(fmt.Sprintf("%s/%d", tt.plan, n), func(t *testing.T) {
				a, err := plans.Assign(prog, n)
				if err != nil {
					t.Fatal(err)
				}
				var b strings.Builder
				if err := WriteShards(&b, prog, a, Limits{OpenFiles: 20000, EphemeralPorts: 28232}); err != nil {
					t.Fatal(err)
				}
				golden.Check(t, filepath.Join(goldenDir, fmt.Sprintf("shards-%s-%d.txt", tt.plan, n)), []byte(b.String()))
			})
		}
	}
}
