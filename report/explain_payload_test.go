package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/internal/golden"
	"github.com/mqplan/mqplan/plans"
)

// TestExplainPayloads: explain shows each group's payload as the plan
// sets it (a template with where its header goes and its first message,
// drawn sizes with their bounds and mean), and the byte rates use the
// mean size.
func TestExplainPayloads(t *testing.T) {
	p, err := plans.Load(filepath.Join("..", "testdata", "plans", "valid", "payload.yaml"), plans.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := plans.Compile(p, plans.CompileOptions{RunID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteExplain(&b, prog, Limits{OpenFiles: 20000, EphemeralPorts: 28232}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("..", "testdata", "golden", "report", "explain-payload.txt"), []byte(b.String()))
}
