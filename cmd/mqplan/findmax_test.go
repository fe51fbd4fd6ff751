package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/mosquittotest"
	await "github.com/mqplan/mqplan/internal/wait"
)

// findMaxDoc is the part of find-max's JSON the tests read.
type findMaxDoc struct {
	Status    string   `json:"status"`
	Answer    *float64 `json:"answer"`
	LastPass  *float64 `json:"last_pass"`
	FirstFail *float64 `json:"first_fail"`
	AtMax     bool     `json:"at_max"`
	Trials    []struct {
		Value    float64  `json:"value"`
		Confirm  bool     `json:"confirm"`
		Verdict  string   `json:"verdict"`
		SendRate *float64 `json:"send_rate"`
		Failed   []string `json:"failed"`
	} `json:"trials"`
}

func readFindMax(t *testing.T, path string) findMaxDoc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d findMaxDoc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return d
}

// TestFindMaxEmbedded searches testdata/cli/findmax.yaml's publish rate
// on the embedded broker. Its threshold, sent <= 130 in a measured
// second, puts the boundary near 130 msg/s on any machine; a trial and
// its confirmation measure one second each, so that the confirmation
// judges the same count. The answer must pass, the first failure above
// it must fail by sending more than 130, and the two must be within the
// precision: the search found the boundary, not a guess.
func TestFindMaxEmbedded(t *testing.T) {
	t.Chdir("../..")
	dir := t.TempDir()
	js, page := filepath.Join(dir, "fm.json"), filepath.Join(dir, "fm.html")
	r := runCmd(t, "find-max", "--trial-duration", "1s", "--confirm-duration", "1s", "--precision", "5%",
		"--out", "json="+js, "--out", "html="+page, "testdata/cli/findmax.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	d := readFindMax(t, js)
	if d.Status != "confirmed" || d.Answer == nil || d.LastPass == nil || d.FirstFail == nil {
		t.Fatalf("status %q, answer %v, knee %v..%v\n%s", d.Status, d.Answer, d.LastPass, d.FirstFail, r.stdout)
	}
	a, hi := *d.Answer, *d.FirstFail
	if a != *d.LastPass || (hi-a)/a > 0.05 || a < 110 || hi > 140 {
		t.Errorf("answer %v, knee %v..%v: want a 5%% bracket around 130\n%s", a, *d.LastPass, hi, r.stdout)
	}
	// 20, 40, 80 pass; 160 fails; then bisection.
	for i, v := range []float64{20, 40, 80, 160} {
		if d.Trials[i].Value != v {
			t.Errorf("trial %d at %v, want %v (×2 from the plan's 20/s)", i+1, d.Trials[i].Value, v)
		}
	}
	last := d.Trials[len(d.Trials)-1]
	if !last.Confirm || last.Value != a || last.Verdict != "PASS" {
		t.Errorf("the last trial is %+v, want the answer's passing confirmation", last)
	}
	for _, tr := range d.Trials {
		if tr.Verdict == "FAIL" && (len(tr.Failed) != 1 || !strings.HasPrefix(tr.Failed[0], "sent <= 130 (sent=")) {
			t.Errorf("trial at %v failed for %q, want sent <= 130 alone", tr.Value, tr.Failed)
		}
		if tr.SendRate == nil || *tr.SendRate < tr.Value*0.9 || *tr.SendRate > tr.Value*1.1 {
			t.Errorf("trial at %v achieved %v msg/s", tr.Value, tr.SendRate)
		}
	}
	for _, s := range []string{"knee: last pass", "ANSWER: groups.pub.rate = ", " confirm |"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("the table lacks %q:\n%s", s, r.stdout)
		}
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), "findmax-chart") {
		t.Errorf("no chart in the HTML page (%v)", err)
	}
}

// TestFindMaxMosquitto runs the shipped 1to1-qos1 plan on Mosquitto,
// shortened, with --max one doubling above the plan's 200 msg/s: both
// trials pass on any machine that runs the shipped plans, so the answer
// is the limit, confirmed, and said to be a lower bound.
func TestFindMaxMosquitto(t *testing.T) {
	if mosquittotest.Binary() == "" && os.Getenv("CI") == "" {
		t.Skip("mosquitto is not installed (apt-get install mosquitto)")
	}
	t.Chdir("../..")
	url := mosquittotest.Start(t)
	js := filepath.Join(t.TempDir(), "fm.json")
	r := runCmd(t, "find-max", "--broker", url, "--set", "warmup=0s", "--set", "ramp=500ms", "--set", "drain=3s",
		"--trial-duration", "1s", "--confirm-duration", "2s", "--max", "400", "--settle", "100ms", "--out", "json="+js, "plans/1to1-qos1.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	d := readFindMax(t, js)
	if d.Status != "confirmed" || d.Answer == nil || *d.Answer != 400 || !d.AtMax || len(d.Trials) != 3 {
		t.Fatalf("got %+v, want 400 confirmed at the limit after 200 and 400\n%s", d, r.stdout)
	}
	if !strings.Contains(r.stdout, "the real maximum may be higher") {
		t.Errorf("the table does not say the answer is a lower bound:\n%s", r.stdout)
	}
}

// TestFindMaxInterrupt: Ctrl-C during a trial stops the search, reports
// the trials so far and exits 3.
func TestFindMaxInterrupt(t *testing.T) {
	t.Chdir("../..")
	cmd := startCmd(t, "find-max", "--trial-duration", "1m", "testdata/cli/findmax.yaml")
	await.Until(t, "the first trial to start", func() bool { return strings.Contains(cmd.stderr.String(), "trial 1:") })
	cmd.signal(t, syscall.SIGINT)
	if code := cmd.wait(t, 30*time.Second); code != 3 {
		t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, cmd.stdout.String(), cmd.stderr.String())
	}
	if out := cmd.stdout.String(); !strings.Contains(out, "INCOMPLETE: interrupted") || !strings.Contains(out, "| 1     |") {
		t.Errorf("the report does not say it was interrupted:\n%s", out)
	}
}

// TestFindMaxInvalid: a wrong knob, flag or range is exit 2, before
// anything connects.
func TestFindMaxInvalid(t *testing.T) {
	t.Chdir("../..")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown group", []string{"--knob", "groups.pbu.rate"}, `did you mean "pub"?`},
		{"subscriber rate", []string{"--knob", "groups.sub.rate"}, `group "sub" does not publish`},
		{"bad precision", []string{"--precision", "0%"}, "want more than 0%"},
		{"start above max", []string{"--from", "500", "--max", "100"}, "outside"},
		{"max beyond the plan's limits", []string{"--knob", "groups.pub.count", "--max", "1e9"}, "--max 1000000000: the plan with groups.pub.count = 1000000000 is invalid"},
		{"unknown format", []string{"--out", "md=x.md"}, "find-max writes json, table or html"},
		{"--set duration is the trials'", []string{"--set", "duration=30s"}, "--set duration=30s: find-max sets each trial's duration"},
		{"--set duration with spaces", []string{"--set", " duration =30s"}, "find-max sets each trial's duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, append(append([]string{"find-max"}, tt.args...), "testdata/cli/findmax.yaml")...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, want 2 with %q\nstderr:\n%s", r.code, tt.want, r.stderr)
			}
		})
	}
}
