package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/internal/mqttc"
)

// crossPlan is TestWorkersCrossCheck's plan: four pairs, $SYS watched.
const crossPlan = `name: crosscheck
broker: {url: embedded, metrics: {sys: true}}
groups:
  - {name: sub, count: 4, client_id: "sub-%i", subscribe: {topic: "cc/%i", qos: 1}}
  - {name: pub, count: 4, client_id: "pub-%i", publish: {topic: "cc/%i", qos: 1, every: 100ms}}
warmup: 0s
duration: 2s
drain: 2s
`

// crossWarnings are a report's warnings from the broker cross-check.
func crossWarnings(ws []string) []string {
	var out []string
	for _, w := range ws {
		if strings.Contains(w, "the broker counted") || strings.Contains(w, "the embedded broker counted") {
			out = append(out, w)
		}
	}
	return out
}

// TestWorkersCrossCheck: mqplan run --workers 2 checks the broker's own
// counters against the whole run's, on the merged figures, as one
// process does (sharded runs had no such check): a client outside the
// plan publishing 5 messages on Mosquitto during the run is named, "+5"
// exactly; a clean run on Mosquitto, and on the embedded broker the
// parent hosts (its counters given to the merge), warns of nothing.
func TestWorkersCrossCheck(t *testing.T) {
	t.Parallel()
	mosq := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "sys_interval 1"})
	path := writePlan(t, crossPlan)
	for _, tc := range []struct {
		name    string
		broker  string // "" the embedded broker the parent hosts
		foreign int
		want    string // in a cross-check warning; "" none
	}{
		{name: "mosquitto outsider", broker: mosq.MQTT, foreign: 5, want: "(+5): other clients published on the broker during the run"},
		{name: "mosquitto clean", broker: mosq.MQTT},
		{name: "embedded clean"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"run", "--workers", "2", "--quiet", "--json", filepath.Join(dir, "w.json")}
			if tc.broker != "" {
				args = append(args, "--broker", tc.broker)
			}
			if tc.foreign > 0 {
				// The outsider publishes once it sees the plan's traffic:
				// inside the broker counters' window.
				seen := make(chan struct{}, 1)
				targets, err := mqttc.NewTargets([]string{tc.broker}, nil)
				if err != nil {
					t.Fatal(err)
				}
				other, err := mqttc.Dial(context.Background(), targets[0], mqttc.Options{ClientID: "outsider", CleanStart: true, Timeout: 5 * time.Second, Version: mqttc.Version311},
					func() int64 { return 0 }, mqttc.Handlers{Deliver: func([]byte, bool) {
						select {
						case seen <- struct{}{}:
						default:
						}
					}})
				if err != nil {
					t.Fatal(err)
				}
				defer other.Close()
				if _, err := other.Subscribe(context.Background(), []mqttc.Subscription{{Filter: "cc/#", QoS: 0}}); err != nil {
					t.Fatal(err)
				}
				go func() {
					select {
					case <-seen:
					case <-time.After(time.Minute):
						return
					}
					for range tc.foreign {
						_ = other.Publish(context.Background(), "outside/t", 0, false, []byte("x"), 0)
					}
				}()
			}
			p := start(t, append(args, path)...)
			if code, out := p.exit(t); !judged(code) {
				t.Fatalf("exit %d\n%s", code, out)
			}
			res := savedResult(t, filepath.Join(dir, "w.json"))
			got := crossWarnings(res.Warnings)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("a clean run warns: %q", got)
			case tc.want != "" && !slices.ContainsFunc(got, func(w string) bool { return strings.Contains(w, tc.want) }):
				t.Errorf("cross-check warnings %q, want one saying %q", got, tc.want)
			}
		})
	}
}
