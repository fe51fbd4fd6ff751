package main

import (
	"bufio"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/mosquittotest"
)

// jsonTemplatePlan publishes a JSON payload template on MQTT 5 without
// saying where the header goes: the default must leave the payload the
// template's output alone.
const jsonTemplatePlan = `name: json-v5
broker: {protocol: 5}
groups:
  - name: sub
    subscribe: {topic: "json/#", qos: 1}
  - name: pub
    count: 2
    publish:
      topic: "json/%i"
      qos: 1
      every: 100ms
      payload: '{"device":"%c","seq":%s,"at":"%T","temp":%{float:-10:40:1}}'
duration: 1s
drain: 2s
`

// TestJSONTemplateReachesPlainSubscriber: a JSON payload template on MQTT 5
// reaches a plain mosquitto_sub, which knows nothing of mqplan, as valid
// JSON (the header travels in a user property, which it does not print),
// while mqplan's own subscriber still measures every delivery exactly:
// received == expected, nothing lost, a latency sample per delivery.
func TestJSONTemplateReachesPlainSubscriber(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("mosquitto_sub")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mosquitto_sub is not installed, but CI must run this test: .ci/run installs mosquitto-clients")
		}
		t.Skip("mosquitto_sub is not installed (apt-get install mosquitto-clients)")
	}
	broker := mosquittotest.Start(t)
	u, err := url.Parse(broker)
	if err != nil {
		t.Fatal(err)
	}
	// -d prints the SUBACK, which says when the subscription is in place;
	// the payloads come on lines of their own. mosquitto_sub buffers a
	// pipe's output whole, so stdbuf (coreutils) makes it line by line.
	stdbuf, err := exec.LookPath("stdbuf")
	if err != nil {
		t.Fatal("stdbuf (coreutils) is not installed")
	}
	sub := exec.Command(stdbuf, "-oL", bin, "-d", "-V", "mqttv5", "-q", "1", "-h", u.Hostname(), "-p", u.Port(), "-t", "json/#", "-W", "60")
	stdout, err := sub.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Process.Kill(); _ = sub.Wait() })
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	deadline := time.After(30 * time.Second)
	for subscribed := false; !subscribed; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("mosquitto_sub exited before subscribing")
			}
			subscribed = strings.HasPrefix(l, "Subscribed")
		case <-deadline:
			t.Fatal("mosquitto_sub did not subscribe within 30s")
		}
	}

	jsonPath := filepath.Join(t.TempDir(), "result.json")
	r := runCmd(t, "run", "--quiet", "--broker", broker, "--out", "json="+jsonPath, writePlan(t, jsonTemplatePlan))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var doc struct {
		Metrics struct {
			Top map[string]any `json:"top"`
		} `json:"metrics"`
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for k, v := range doc.Metrics.Top {
		if f, ok := v.(float64); ok {
			m[k] = f
		}
	}
	if m["sent"] < 10 || m["received"] != m["expected"] || m["expected"] != m["sent"] || m["lost"] != 0 || m["corrupted"] != 0 {
		t.Fatalf("mqplan measured sent %v, expected %v, received %v, lost %v, corrupted %v: want every message received",
			m["sent"], m["expected"], m["received"], m["lost"], m["corrupted"])
	}
	if s, _ := doc.Metrics.Top["latency.min"].(string); s == "" || s == "0s" {
		t.Errorf("no latency measured (latency.min %v)", doc.Metrics.Top["latency.min"])
	}

	// The plain subscriber got every message, each a JSON object.
	want := int(m["sent"])
	got := 0
	for got < want {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("mosquitto_sub exited after %d of %d messages", got, want)
			}
			if strings.HasPrefix(l, "Client ") {
				continue // a debug line
			}
			var msg struct {
				Device string   `json:"device"`
				Seq    int      `json:"seq"`
				At     string   `json:"at"`
				Temp   *float64 `json:"temp"`
			}
			if err := json.Unmarshal([]byte(l), &msg); err != nil {
				t.Fatalf("message %d is not JSON (%v): %q", got+1, err, l)
			}
			if msg.Device == "" || msg.Seq < 1 || msg.Temp == nil {
				t.Fatalf("message %d lacks a field: %q", got+1, l)
			}
			if _, err := time.Parse(time.RFC3339, msg.At); err != nil {
				t.Fatalf("message %d: at %q: %v", got+1, msg.At, err)
			}
			got++
		case <-deadline:
			t.Fatalf("mosquitto_sub printed %d of %d messages within 30s", got, want)
		}
	}
}
