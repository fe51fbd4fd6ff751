package emqttbench

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelp checks that --help lists every option the command takes, with
// its default, and none it does not take.
func TestHelp(t *testing.T) {
	for _, kind := range []Kind{Conn, Sub, Pub} {
		t.Run(string(kind), func(t *testing.T) {
			var b bytes.Buffer
			WriteHelp(&b, kind)
			flat := strings.Join(strings.Fields(b.String()), " ")
			for _, opt := range options {
				if !opt.takes(kind) {
					if strings.Contains(flat, "--"+opt.long+" ") {
						t.Errorf("--help lists --%s, which %s does not take", opt.long, kind)
					}
					continue
				}
				names := "--" + opt.long
				if opt.short != 0 {
					names = "-" + string(opt.short) + ", " + names
				}
				if !strings.Contains(flat, names) {
					t.Errorf("--help lacks %q", names)
				}
				if opt.def != "" && !strings.Contains(flat, "[default: "+opt.def+"]") {
					t.Errorf("--help lacks the default of --%s (%s)", opt.long, opt.def)
				}
			}
		})
	}
}
