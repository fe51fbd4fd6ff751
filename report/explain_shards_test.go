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

// TestExplainShards pins explain --shards on every shipped plan at 2 and 8
// shards (testdata/golden/report/shards-PLAN-N.txt; -update rewrites
// them), among them: 1-to-1 pairs kept together (no delivery across
// shards), a fan-out and a fan-in split, a share group whole, idle clients
// striped; and the XMeter seed over 10 shards (docs/scale-out.md's).
func TestExplainShards(t *testing.T) {
	files, err := fs.Glob(plans.Shipped, "*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("shipped plans: %v %v", files, err)
	}
	for _, f := range files {
		data, err := fs.ReadFile(plans.Shipped, f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := plans.LoadBytes("plans/"+f, data, plans.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		prog, err := plans.Compile(p, plans.CompileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(f, ".yaml")
		shards := []int{2, 8}
		if name == "xmeter-100k" {
			shards = append(shards, 10)
		}
		for _, n := range shards {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				a, err := plans.Assign(prog, n)
				if err != nil {
					t.Fatal(err)
				}
				var b strings.Builder
				if err := WriteShards(&b, prog, a, Limits{OpenFiles: 20000, EphemeralPorts: 28232}); err != nil {
					t.Fatal(err)
				}
				golden.Check(t, filepath.Join(goldenDir, fmt.Sprintf("shards-%s-%d.txt", name, n)), []byte(b.String()))
			})
		}
	}
}
