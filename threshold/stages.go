package threshold

import (
	"strconv"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"

	"github.com/mqplan/mqplan/metric"
)

// Stages is one stage of a plan's `stages:` timeline: the messages
// intended within its window (stages.peak.latency.p99), named by its name
// or by its index from 0 (stages[2].p99, which reads the same figures).
const Stages Scope = "stages"

// renamedAt is one stage written by its index: where the index is in the
// rewritten text, and the stage's name it stands for.
type renamedAt struct {
	at   file.Location
	name string
}

// stage resolves the stage parts[1] names, by name or by index (a name is
// never only digits, so digits are always an index), to the stage's name,
// and records an index for compile to rename. parts[0] is "stages".
func (c *checker) stage(parts []part) (string, bool) {
	root, list := parts[0], c.env.stages
	if len(parts) == 1 {
		example := "0"
		if len(list) > 0 {
			example = list[0]
		}
		c.fail(root.at, "%s needs a stage name or index and a metric, e.g. %s%s.p99 or %s[0].p99", root.name, root.name, scopeMember(Stages, example), root.name)
		return "", false
	}
	p := parts[1]
	name := p.name
	if i, err := strconv.Atoi(name); err == nil && isDigits(name) {
		if i >= len(list) {
			if len(list) == 0 {
				c.fail(p.at, "unknown stage index %d (the plan has no stages)", i)
			} else {
				c.fail(p.at, "unknown stage index %d: the plan's %d stages are numbered 0 to %d", i, len(list), len(list)-1)
			}
			return "", false
		}
		name = list[i]
		if name != p.name || p.index {
			c.renamed = append(c.renamed, renamedAt{at: p.loc, name: name})
		}
	} else if !c.env.stageSet[name] {
		c.fail(p.at, "%s", unknownName("stage", name, list))
		return "", false
	}
	if len(parts) == 2 {
		c.fail(p.at, "%s%s needs a metric, e.g. %s%s.p99", root.name, scopeMember(Stages, name), root.name, scopeMember(Stages, name))
		return "", false
	}
	return name, true
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// scopeMember is name as a threshold spells it after its scope: .sub,
// ["my-group"], and for an unnamed stage (its name is its index) [2].
func scopeMember(s Scope, name string) string {
	if s == Stages && isDigits(name) {
		return "[" + name + "]"
	}
	return memberSyntax(name)
}

// exampleOr is the first of list, or def when list is empty.
func exampleOr(list []string, def string) string {
	if len(list) > 0 {
		return list[0]
	}
	return def
}

// renamePatch turns each stage index the checker resolved into the
// stage's name (expr's ast.Visitor), so that stages[0] reads the metrics
// Eval puts under the stage's name.
type renamePatch struct{ at []renamedAt }

// Visit patches one node.
func (p *renamePatch) Visit(node *ast.Node) {
	switch (*node).(type) {
	case *ast.IntegerNode, *ast.StringNode:
	default:
		return
	}
	for _, r := range p.at {
		if r.at == (*node).Location() {
			ast.Patch(node, &ast.StringNode{Value: r.name})
			return
		}
	}
}

// stageCounts are the metrics a stage measures besides the latency.* and
// lag.* families: its messages' publishes and deliveries. Connections,
// acks, errors and requests are not split by stage (a stage is a window
// of intended send times, not of connections), so a threshold on them in
// a stage is refused when the plan is checked rather than failing "no
// samples" after the run.
var stageCounts = map[metric.Name]bool{
	metric.Sent: true, metric.Unsent: true, metric.Expected: true, metric.Received: true,
	metric.Lost: true, metric.LostUnsent: true, metric.LostUnacked: true, metric.LostBroker: true, metric.LostLate: true,
	metric.LossRate: true, metric.Duplicates: true, metric.DupRate: true, metric.OutOfOrder: true,
	metric.OOORate: true, metric.OverlapCopies: true, metric.SendRate: true, metric.RecvRate: true,
	metric.SentBytes: true, metric.ReceivedBytes: true, metric.LateRate: true,
}

// StageMetric reports whether a stage measures the metric name (see
// stageCounts): the report leaves the others out of a stage's set.
func StageMetric(name metric.Name) bool {
	if stageCounts[name] {
		return true
	}
	family, _, ok := name.Split()
	// A stage's latency is not split by shard (latency_local,
	// latency_cross, latency.cross_share): its cells carry no cross-shard
	// histogram.
	return ok && (family == "latency" && name != metric.LatencyCrossShare || family == "lag")
}

// ShardSplit reports whether name is one of the figures that split
// latency by shard (latency_local.*, latency_cross.*,
// latency.cross_share): a sharded run's whole-run and per-group figures,
// measured per stage by no one, and absent from a merge whose parts did
// not split their deliveries.
func ShardSplit(name metric.Name) bool {
	family, _, _ := name.Split()
	return family == "latency_local" || family == "latency_cross" || name == metric.LatencyCrossShare
}

// stageMetricList lists the metrics a stage measures, for messages.
func stageMetricList() string {
	var out []string
	for _, md := range metric.All() {
		if stageCounts[md.Name] {
			out = append(out, string(md.Name))
		}
	}
	return strings.Join(append(out, "latency.*", "lag.*"), ", ")
}
