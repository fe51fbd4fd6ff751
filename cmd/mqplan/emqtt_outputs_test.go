package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/loopback"
	await "github.com/mqplan/mqplan/internal/wait"
)

// TestEmqttOutputs: the emqtt-bench commands write `mqplan run`'s outputs
// (--out, --json) with --label in them, serve --metrics-listen while they
// run, and judge --threshold against a --baseline saved by an earlier run;
// with an output on standard output, that output is all standard output
// holds (the per-second lines move to standard error).
func TestEmqttOutputs(t *testing.T) {
	t.Parallel()
	u := startEmqttBroker(t, 1)[0]
	host, port := u.Hostname(), u.Port()
	dir := t.TempDir()
	saved, junit := filepath.Join(dir, "a.json"), filepath.Join(dir, "a.xml")
	addr := loopback.FreeAddr(t)

	// A first run: outputs to files, and live metrics scraped while it runs.
	first := startCmd(t, "pub", "-h", host, "-p", port, "-t", "t", "-c", "2", "-I", "50", "--duration", "2s",
		"--label", "mosquitto", "--json", saved, "--out", "junit="+junit, "--metrics-listen", addr)
	await.Until(t, "metrics served by mqplan pub on "+addr, func() bool {
		fams, err := scrapeMetrics("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		for name := range fams {
			if strings.HasPrefix(name, "mqplan_") {
				return true
			}
		}
		return false
	})
	if code := first.wait(t, time.Minute); code != exitPass {
		t.Fatalf("first run: exit %d\n%s\n%s", code, first.stdout.String(), first.stderr.String())
	}
	var res struct {
		Label   string `json:"label"`
		Verdict string `json:"verdict"`
	}
	b, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Label != "mosquitto" || res.Verdict != "PASS" {
		t.Errorf("--json: label %q verdict %q, want mosquitto and PASS", res.Label, res.Verdict)
	}
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Hostname string `xml:"hostname,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(x, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 1 || !strings.HasSuffix(doc.Suites[0].Name, " [mosquitto]") || doc.Suites[0].Hostname == "" {
		t.Errorf("--out junit: suites %+v, want one named with the label, with a hostname", doc.Suites)
	}

	// A second run judged against the first, its JSON on standard output.
	r := runCmd(t, "pub", "-h", host, "-p", port, "-t", "t", "-c", "2", "-I", "50", "--duration", "2s",
		"--baseline", saved, "--threshold", "sent >= baseline.sent * 0.5", "--out", "json=-")
	if r.code != exitPass {
		t.Fatalf("second run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var second struct {
		Thresholds []struct {
			Expr string `json:"expr"`
			Pass bool   `json:"pass"`
		} `json:"thresholds"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &second); err != nil {
		t.Fatalf("standard output is not the JSON result alone: %v\n%s", err, r.stdout)
	}
	found := false
	for _, th := range second.Thresholds {
		found = found || th.Expr == "sent >= baseline.sent * 0.5" && th.Pass
	}
	if !found {
		t.Errorf("the baseline threshold is not judged, or failed: %+v", second.Thresholds)
	}
	if !emqttLineRE.MatchString(r.stderr) || !strings.Contains(r.stderr, "Compared with the baseline") {
		t.Errorf("standard error lacks the per-second lines or the table's comparison:\n%s", r.stderr)
	}
}

// TestEmqttOutputOptionsRefused: the output options' mistakes are refused
// before anything connects, as run refuses them, and emqtt-bench's options
// that mqplan does not take say why.
func TestEmqttOutputOptionsRefused(t *testing.T) {
	dir := t.TempDir()
	runCmdCases(t, []cmdCase{
		{name: "unknown format", args: []string{"conn", "--out", "xml=a.xml"}, code: exitInvalid,
			want: []string{`--out: unknown format "xml"`}},
		{name: "no file", args: []string{"conn", "--out", "junit"}, code: exitInvalid,
			want: []string{"--out: want FORMAT=FILE"}},
		{name: "missing directory", args: []string{"conn", "--out", "junit=" + filepath.Join(dir, "no", "a.xml")}, code: exitInvalid,
			want: []string{"--out junit="}},
		{name: "empty label", args: []string{"conn", "--label", ""}, code: exitInvalid,
			want: []string{"--label: want a name"}},
		{name: "label with a line break", args: []string{"conn", "--label", "a\nb"}, code: exitInvalid,
			want: []string{"--label: a control character"}},
		{name: "missing baseline", args: []string{"conn", "--baseline", filepath.Join(dir, "none.json")}, code: exitInvalid,
			want: []string{"--baseline"}},
		{name: "--prometheus", args: []string{"conn", "--prometheus"}, code: exitInvalid,
			want: []string{"emqtt-bench's --prometheus is not supported: use --metrics-listen ADDR"}},
		{name: "--reconnect", args: []string{"sub", "-t", "t", "--reconnect", "3"}, code: exitInvalid,
			want: []string{"emqtt-bench's --reconnect is not supported: write a plan whose group has reconnect:"}},
	})
}
