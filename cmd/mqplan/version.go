package main

import (
	"runtime/debug"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=..."; left
// at "dev", the module version from the build info is used instead.
var version = "dev"

// versionLine is what `mqplan version` prints: the version, the Go
// release, and the VCS revision the binary was built from (with
// "+modified" when the tree had uncommitted changes), so that a figure
// in a report can be traced to the code that measured it.
//
//	mqplan v0.4.0 (go1.26.0, rev 8be232e0a1b2, 2026-11-30T14:02:11Z)
//	mqplan devel (go1.26.0, rev 8be232e0a1b2+modified, 2026-11-30T14:02:11Z)
func versionLine(info *debug.BuildInfo, ok bool, stamped string) string {
	v := stamped
	var details []string
	if ok {
		if v == "dev" || v == "" {
			v = info.Main.Version
		}
		details = append(details, info.GoVersion)
		var rev, when string
		modified := false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" {
			rev = "rev " + rev[:min(len(rev), 12)]
			if modified {
				rev += "+modified"
			}
			details = append(details, rev)
		}
		if when != "" {
			details = append(details, when)
		}
	}
	if v == "" || v == "(devel)" || v == "dev" {
		v = "devel"
	}
	line := "mqplan " + v
	if len(details) > 0 {
		line += " (" + strings.Join(details, ", ") + ")"
	}
	return line
}

// resultVersion is what this binary's results record as the mqplan that
// made them (report.Result.MqplanVersion): buildVersion less its leading
// "mqplan ".
func resultVersion() string { return strings.TrimPrefix(buildVersion(), "mqplan ") }

// buildVersion is versionLine for this binary.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	return versionLine(info, ok, version)
}
