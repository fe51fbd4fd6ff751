package plans

import (
	"fmt"
	"strings"

	"github.com/mqplan/mqplan/internal/yamlnode"
)

// sharding decodes the plan's `sharding:` section.
func (l *loader) sharding(top *keySection, p *Plan) {
	e, ok := top.get("sharding")
	if !ok || yamlnode.IsNull(e.val) {
		return
	}
	sh := &Sharding{Strategy: ShardingAuto, Pos: l.pos(e.val)}
	s := l.section(e.path, e.val, shardingKeys, false)
	if se, ok := s.get("strategy"); ok {
		if v, ok := l.value(se, "auto or stripe"); ok {
			switch v = strings.TrimSpace(v); v {
			case ShardingAuto, ShardingStripe:
				sh.Strategy = v
			default:
				msg := fmt.Sprintf("must be auto or stripe, got %s", gotValue(v))
				if hint := suggestKey(v, []string{ShardingAuto, ShardingStripe}); hint != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", hint)
				}
				l.errorf(se.val, se.path, "%s", msg)
			}
		}
	}
	p.Sharding = sh
}
