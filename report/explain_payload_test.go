package report

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/golden"
	"github.com/mqplan/mqplan/plans"
)

// TestExplainPayloads: explain shows each group's payload as the plan
// sets it (a template with where its header goes and its first message,
// drawn sizes with their bounds and mean), and the byte rates use the
// mean size. Time placeholders render at the sample time the caller
// gives (fixed here, so that the golden stays the same).
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
	if err := WriteExplain(&b, prog, Limits{OpenFiles: 20000, EphemeralPorts: 28232, Now: time.Date(2026, 5, 4, 12, 30, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("..", "testdata", "golden", "report", "explain-payload.txt"), []byte(b.String()))
}
