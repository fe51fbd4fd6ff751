package plans

import (
	"fmt"
	"strings"

	"github.com/mqplan/mqplan/internal/yamlnode"
)

// The values of a plan's disturbance: what a run gets whose only failures
// are latency thresholds that mqplan's own lack of CPU explains (package
// report decides what explains them).
const (
	// DisturbanceInconclusive, the default, gives such a run the verdict
	// INCONCLUSIVE (exit code 4): its latency is not judged.
	DisturbanceInconclusive = "inconclusive"
	// DisturbanceFail judges it as any other failure (exit code 1).
	DisturbanceFail = "fail"
)

// disturbance decodes the top-level disturbance: key; absent leaves the
// default (empty, which means DisturbanceInconclusive).
func (l *loader) disturbance(top *keySection, p *Plan) {
	e, ok := top.get("disturbance")
	if !ok || yamlnode.IsNull(e.val) {
		return
	}
	v, ok := l.value(e, "inconclusive or fail")
	if !ok {
		return
	}
	switch v = strings.TrimSpace(v); v {
	case DisturbanceInconclusive, DisturbanceFail:
		p.Disturbance = v
	default:
		msg := fmt.Sprintf("must be inconclusive or fail, got %s", gotValue(v))
		if hint := suggestKey(v, []string{DisturbanceInconclusive, DisturbanceFail}); hint != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", hint)
		}
		l.errorf(e.val, e.path, "%s", msg)
	}
}
