package report

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/mqplan/mqplan/internal/golden"
	"github.com/mqplan/mqplan/plans"
)

// TestExplainChurn pins what explain says of the shipped churn plan: each
// churning group's period, time away, sessions per client, reconnections
// per second, the messages its publishers skip while away, and the
// returns counted in the publishing phases' connects (all from the
// timetable, plans.Sessions, which the plans tests hold to a walk).
//
// fleet-growth.yaml pins the same for stage clients: the group's count
// over the stages, its leaves and returns, and each first client's
// windows.
func TestExplainChurn(t *testing.T) {
	for _, name := range []string{"churn", "fleet-growth"} {
		t.Run(name, func(t *testing.T) {
			p, err := plans.Load("../plans/"+name+".yaml", plans.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			prog, err := plans.Compile(p, plans.CompileOptions{RunID: "golden"})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := WriteExplain(&b, prog, Limits{}); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(goldenDir, "explain-"+name+".txt"), b.Bytes())
		})
	}
}
