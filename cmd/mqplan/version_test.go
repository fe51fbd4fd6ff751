package main

import (
	"runtime/debug"
	"testing"
)

// TestVersionLine checks what `mqplan version` prints for each way a
// binary can be built.
func TestVersionLine(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "8be232e0a1b2c3d4e5f6"}, {Key: "vcs.time", Value: "2026-11-30T14:02:11Z"}}
	tests := []struct {
		name    string
		info    *debug.BuildInfo
		ok      bool
		stamped string
		want    string
	}{
		{"go install of a release: the module version", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.4.0"}},
			true, "dev", "mqplan v0.4.0 (go1.26.0)"},
		{"go build in a checkout: devel with the revision", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			true, "dev", "mqplan devel (go1.26.0, rev 8be232e0a1b2, 2026-11-30T14:02:11Z)"},
		{"uncommitted changes are said", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
			Settings: append(vcs, debug.BuildSetting{Key: "vcs.modified", Value: "true"})},
			true, "dev", "mqplan devel (go1.26.0, rev 8be232e0a1b2+modified, 2026-11-30T14:02:11Z)"},
		{"-ldflags -X main.version wins", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			true, "v1.0.0-rc1", "mqplan v1.0.0-rc1 (go1.26.0, rev 8be232e0a1b2, 2026-11-30T14:02:11Z)"},
		{"a short revision is kept whole", &debug.BuildInfo{GoVersion: "go1.26.0", Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}},
			true, "dev", "mqplan devel (go1.26.0, rev abc)"},
		{"no build info", nil, false, "dev", "mqplan devel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionLine(tt.info, tt.ok, tt.stamped); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
