package report

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/plans"
)

// TestInsecureTLSShown: a run that did not verify the broker's certificate
// says so in the table's header and the JSON's warnings.
func TestInsecureTLSShown(t *testing.T) {
	tests := []struct {
		name string
		tls  *plans.TLS
		want bool
	}{
		{"no TLS", nil, false},
		{"verified TLS", &plans.TLS{CA: "ca.pem"}, false},
		{"insecure_skip_verify: true", &plans.TLS{InsecureSkipVerify: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPlan()
			p.Broker.TLS = tt.tls
			r := Evaluate(p, nil, fullStats(t))
			var table, js bytes.Buffer
			if err := WriteTable(&table, r); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSON(&js, r); err != nil {
				t.Fatal(err)
			}
			var doc struct{ Warnings []string }
			if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			header, _, _ := strings.Cut(table.String(), "\n+")
			if got := strings.Contains(header, "WARNING: "+insecureWarning); got != tt.want {
				t.Errorf("table header shows the warning: %v, want %v\n%s", got, tt.want, header)
			}
			if got := slices.Contains(doc.Warnings, insecureWarning); got != tt.want {
				t.Errorf("JSON warnings %q: has it %v, want %v", doc.Warnings, got, tt.want)
			}
		})
	}
}
