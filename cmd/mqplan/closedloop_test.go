package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/mosquittotest"
)

// closedLoopResult is what these tests read of a saved JSON result.
type closedLoopResult struct {
	Warnings []string `json:"warnings"`
	Metrics  struct {
		Top map[string]any `json:"top"`
	} `json:"metrics"`
}

// runSaved runs mqplan with the JSON, Markdown and HTML results saved and
// the table on stdout, and returns the exit, the table, the JSON and the
// other two files' text.
func runSaved(t *testing.T, args ...string) (result, closedLoopResult, string, string) {
	t.Helper()
	d := t.TempDir()
	js, md, html := filepath.Join(d, "r.json"), filepath.Join(d, "r.md"), filepath.Join(d, "r.html")
	r := runCmd(t, append([]string{"run", "--quiet", "--out", "json=" + js, "--out", "md=" + md, "--out", "html=" + html, "--out", "table=-"}, args...)...)
	var doc closedLoopResult
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatalf("no saved result (exit %d): %v\n%s", r.code, err, r.stderr)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	mdText, _ := os.ReadFile(md)
	htmlText, _ := os.ReadFile(html)
	return r, doc, string(mdText), string(htmlText)
}

// TestClosedLoopExplain: explain shows the closed loop's window and says
// which figures only the run can give.
func TestClosedLoopExplain(t *testing.T) {
	r := runCmd(t, "explain", "plans/max-qos1.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"max/%i q1 1000B", "max, inflight 32", "as fast as possible", "closed loop (rate: max): group pub publishes as fast as its window allows for 11s", "known only after the run", "service latency"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("explain lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestClosedLoopRun runs the shipped closed-loop plan, shortened, on the
// embedded broker and on Mosquitto with its $SYS counters read: it
// passes, achieves a rate, delivers everything it sent exactly once
// (expected == received == sent), the broker counted the same PUBLISH
// packets, the report says what its latency measures, and no overdrive
// warning is raised: a closed loop has no schedule to fall behind.
func TestClosedLoopRun(t *testing.T) {
	t.Parallel()
	brokers := []struct{ name, url string }{{name: "embedded"}}
	if mosquittotest.Binary() != "" || os.Getenv("CI") != "" {
		p := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "sys_interval 1"})
		brokers = append(brokers, struct{ name, url string }{"mosquitto", p.MQTT})
	}
	for _, b := range brokers {
		t.Run(b.name, func(t *testing.T) {
			args := []string{"--set", "duration=2s", "--set", "warmup=0s", "--set", "drain=3s", "--set", "broker.metrics.sys=true"}
			if b.url != "" {
				args = append(args, "--broker", b.url)
			}
			r, doc, md, html := runSaved(t, append(args, "plans/max-qos1.yaml")...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			top := doc.Metrics.Top
			sent, _ := top["sent"].(float64)
			if rate, _ := top["send_rate"].(float64); rate <= 0 || sent <= 0 {
				t.Errorf("send_rate %v, sent %v: the closed loop achieved nothing", top["send_rate"], top["sent"])
			}
			if top["expected"] != top["sent"] || top["received"] != top["sent"] || top["lost"] != 0.0 || top["duplicates"] != 0.0 {
				t.Errorf("sent %v expected %v received %v lost %v duplicates %v: want expected == received == sent", top["sent"], top["expected"], top["received"], top["lost"], top["duplicates"])
			}
			if got := top["broker.publish.received"]; got != top["sent"] {
				t.Errorf("the broker counted %v PUBLISH received, mqplan sent %v", got, top["sent"])
			}
			note := "group pub ran a closed loop (rate: max, inflight 32): it achieved "
			for name, text := range map[string]string{"table": r.stdout, "markdown": md, "html": html, "json": strings.Join(doc.Warnings, "\n")} {
				if !strings.Contains(text, note) {
					t.Errorf("the %s lacks the closed-loop note", name)
				}
				if strings.Contains(text, "the schedule was not held") {
					t.Errorf("the %s warns of overdrive on a closed loop", name)
				}
			}
			if !strings.Contains(html, "as fast as possible (rate: max, inflight 32 per client)") {
				t.Error("the HTML page's plan does not describe the closed loop")
			}
			if strings.Contains(r.stdout, "the broker counted") || strings.Contains(r.stdout, "the embedded broker counted") {
				t.Errorf("the broker's counters disagree with mqplan's:\n%s", r.stdout)
			}
		})
	}
}

// overdrivePlan publishes QoS 1 from 4 clients at the given rate for 2 s.
func overdrivePlan(t *testing.T, url, rate string) string {
	return writePlan(t, "name: overdrive\nbroker:\n  url: "+url+"\ngroups:\n"+
		"  - {name: sub, count: 1, subscribe: {topic: od/#, qos: 1}}\n"+
		"  - {name: pub, count: 4, publish: {topic: od/%i, qos: 1, size: 64, rate: "+rate+"}}\n"+
		"warmup: 0s\nduration: 2s\ndrain: 2s\n")
}

// TestOverdriveWarning is the S1 case made small: a plan far above what
// the broker (embedded, or Mosquitto) reaches on this machine is told, in
// every report, that its schedule was not held and at what rate the run
// was saturated; a plan well within reach is not.
func TestOverdriveWarning(t *testing.T) {
	brokers := []struct{ name, url string }{{name: "embedded", url: "embedded"}}
	if mosquittotest.Binary() != "" || os.Getenv("CI") != "" {
		brokers = append(brokers, struct{ name, url string }{"mosquitto", mosquittotest.Start(t)})
	}
	for _, b := range brokers {
		tests := []struct {
			name, rate string
			warned     bool
		}{
			{name: "1M msg/s: not held", rate: "1000000/s", warned: true},
			{name: "200 msg/s: held", rate: "200/s"},
		}
		for _, tc := range tests {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				began := time.Now()
				r, doc, md, html := runSaved(t, overdrivePlan(t, b.url, tc.rate))
				if !tc.warned {
					if r.code != 0 {
						t.Fatalf("exit %d\n%s", r.code, r.stdout)
					}
					for _, text := range []string{r.stdout, md, html, strings.Join(doc.Warnings, "\n")} {
						if strings.Contains(text, "the schedule was not held") {
							t.Fatalf("a run that held its schedule is warned:\n%s", r.stdout)
						}
					}
					return
				}
				if r.code != 1 {
					t.Errorf("exit %d, want 1 (the built-in unsent == 0 fails)", r.code)
				}
				if len(doc.Warnings) == 0 || !strings.HasPrefix(doc.Warnings[0], "the schedule was not held: the broker (or mqplan) is saturated at ") {
					t.Fatalf("the JSON's first warning is not the overdrive warning: %q", doc.Warnings)
				}
				w := doc.Warnings[0]
				for _, want := range []string{" msg/s: the plan asked for ", "were never sent", "the lag behind the schedule grew to"} {
					if !strings.Contains(w, want) {
						t.Errorf("the warning lacks %q: %s", want, w)
					}
				}
				for name, text := range map[string]string{"table": r.stdout, "markdown": md, "html": html} {
					if !strings.Contains(text, "the schedule was not held") {
						t.Errorf("the %s lacks the overdrive warning", name)
					}
				}
				if !strings.Contains(r.stdout, "WARNING: the schedule was not held") {
					t.Errorf("the table does not lead with the warning:\n%s", r.stdout)
				}
				t.Logf("%s (run took %s)", w, time.Since(began).Round(time.Millisecond))
			})
		}
	}
}

// TestEmqttPubMax: emqtt-bench's -I 0 -F N is the closed loop; with -L
// the run ends when the limit is sent, not after the default 24 h.
func TestEmqttPubMax(t *testing.T) {
	u := startEmqttBroker(t, 1)[0]
	r := runCmd(t, "pub", "-h", u.Hostname(), "-p", u.Port(), "-t", "t/%i", "-c", "2", "-I", "0", "-F", "4", "-q", "1", "-L", "2000")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := lastTotal(r.stdout, "sent"); got != 2000 {
		t.Errorf("last sent total %d, want 2000:\n%s", got, r.stdout)
	}
	if !strings.Contains(r.stdout, "group pub ran a closed loop (rate: max, inflight 4)") {
		t.Errorf("the report does not say it ran the closed loop:\n%s", r.stdout)
	}
}
