package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
)

// TestAmbiguousNote: the table, Markdown and HTML say, under the delivery
// table, how many deliveries to a clean churning group were ambiguous and
// how many arrived, and say nothing of it for any other plan.
func TestAmbiguousNote(t *testing.T) {
	const want = "churn.ambiguous): sub 7 (5 arrived)"
	for _, tc := range []struct {
		name         string
		churn, clean bool
	}{
		{name: "no churn"},
		{name: "churn with kept sessions", churn: true},
		{name: "churn with clean sessions", churn: true, clean: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := fullStats(t)
			g := &st.Phase(phase.Steady).Groups[0]
			g.ChurnAmbiguous, g.ChurnAmbiguousReceived = 7, 5
			p := testPlan()
			if tc.churn {
				p.Groups[0].Churn = &plans.Churn{Lifetime: time.Second, Away: time.Second}
			}
			p.Groups[0].CleanStart = tc.clean
			r := Evaluate(p, nil, st)
			var table, md, html bytes.Buffer
			if err := WriteTable(&table, r); err != nil {
				t.Fatal(err)
			}
			if err := WriteMarkdown(&md, r); err != nil {
				t.Fatal(err)
			}
			if err := WriteHTML(&html, r); err != nil {
				t.Fatal(err)
			}
			for format, out := range map[string]string{"table": table.String(), "markdown": md.String(), "html": html.String()} {
				if got := strings.Contains(out, want); got != tc.clean {
					t.Errorf("%s: note %q present %v, want %v", format, want, got, tc.clean)
				}
			}
		})
	}
}
