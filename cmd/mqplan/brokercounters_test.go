package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/mqplan/mqplan/internal/mosquittotest"
	waitpkg "github.com/mqplan/mqplan/internal/wait"
)

// TestBrokerCountersMosquitto: with broker.metrics.sys against a real
// Mosquitto updating $SYS every second, the run reports the broker's own
// counters (the Broker section; the thresholds on them judged both ways),
// its PUBLISH-received change is exactly mqplan's sent count, the
// cross-check finds nothing to warn about, and a saved result re-renders
// the section.
func TestBrokerCountersMosquitto(t *testing.T) {
	t.Parallel()
	p := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "sys_interval 1"})
	metrics := "  metrics: {sys: true}\n"
	tests := []struct {
		name       string
		thresholds []string
		code       int
	}{
		{name: "judged and passing", thresholds: []string{"broker.dropped == 0", "broker.publish.received == sent", "broker.publish.sent >= received", "broker.clients.max >= 5"}},
		{name: "a threshold on them fails", thresholds: []string{"broker.publish.received < 1"}, code: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, top := savedMetrics(t, procPlan(p.MQTT, metrics, tt.thresholds...))
			if res.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", res.code, tt.code, res.stdout, res.stderr)
			}
			if !strings.Contains(res.stdout, "Broker (its own counters") || !strings.Contains(res.stdout, "| publish_received |") {
				t.Errorf("the table has no Broker section:\n%s", res.stdout)
			}
			if strings.Contains(res.stdout, "the broker counted") {
				t.Errorf("a clean run against Mosquitto warns:\n%s", res.stdout)
			}
			if recv, sent := top["broker.publish.received"], top["sent"]; recv == nil || recv != sent {
				t.Errorf("broker.publish.received %v, want mqplan's sent %v", recv, sent)
			}
		})
	}
}

// TestBrokerCountersAbsent: without broker.metrics sys or prometheus the
// broker's counters are absent, so a threshold on them fails with a
// reason instead of passing on nothing.
func TestBrokerCountersAbsent(t *testing.T) {
	t.Parallel()
	res, top := savedMetrics(t, procPlan("embedded", "", "broker.dropped == 0"))
	if res.code != 1 || !strings.Contains(res.stdout, "no samples for broker.dropped") {
		t.Fatalf("exit %d, want 1 with no samples for broker.dropped\n%s%s", res.code, res.stdout, res.stderr)
	}
	if _, ok := top["broker.dropped"]; ok {
		t.Error("broker.dropped measured without broker.metrics")
	}
}

// TestBrokerCountersEmbeddedRerender: the embedded broker with sys: true
// reports its counters, and `mqplan report` re-renders the saved result's
// Broker section in Markdown.
func TestBrokerCountersEmbeddedRerender(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	saved := filepath.Join(dir, "r.json")
	res := runCmd(t, "run", "--quiet", "--out", "json="+saved, writePlan(t, procPlan("embedded", "  metrics: {sys: true}\n", "broker.publish.received == sent")))
	if res.code != 0 {
		t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if strings.Contains(res.stdout+res.stderr, "counted") {
		t.Errorf("the cross-check warns on a clean embedded run:\n%s%s", res.stdout, res.stderr)
	}
	md := filepath.Join(dir, "r.md")
	if res := runCmd(t, "report", "--out", "md="+md, saved); res.code != 0 {
		t.Fatalf("report: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "### Broker") || !strings.Contains(string(b), "| publish_received |") {
		t.Errorf("the re-rendered summary has no Broker section:\n%s", b)
	}
}

// TestPrometheusURLSecrets: a Prometheus URL that a password holding #,
// /, ? or a space breaks is refused by validate and run without a piece
// of its user information in the message; a working URL's user name and
// password appear in no output of a run whose scrapes fail.
func TestPrometheusURLSecrets(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, password string }{
		{name: "hash", password: "Zq#Wx"},
		{name: "space", password: "Zq Wx"},
		{name: "slash", password: "Zq/Wx"},
		{name: "question mark", password: "Zq?Wx"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan := writePlan(t, procPlan("embedded", "  metrics: {prometheus: \"http://zorkuser:"+tt.password+"@127.0.0.1/m\"}\n"))
			for _, cmd := range []string{"validate", "run"} {
				res := runCmd(t, cmd, plan)
				out := res.stdout + res.stderr
				if res.code != 2 || !strings.Contains(out, "broker.metrics.prometheus") {
					t.Errorf("%s: exit %d, want 2 naming broker.metrics.prometheus\n%s", cmd, res.code, out)
				}
				for _, secret := range []string{"zorkuser", "Zq", "Wx"} {
					if strings.Contains(out, secret) {
						t.Errorf("%s: the output holds %q:\n%s", cmd, secret, out)
					}
				}
			}
		})
	}
	t.Run("user name of a working URL", func(t *testing.T) {
		dir := t.TempDir()
		// Nothing listens on port 1: every scrape fails and says so.
		plan := writePlan(t, procPlan("embedded", "  metrics: {prometheus: \"http://zorkuser:Zq9Wx@127.0.0.1:1/m\"}\n"))
		args := []string{"run", "--out", "table=-"}
		for _, f := range []string{"json", "junit", "md", "html", "csv"} {
			args = append(args, "--out", f+"="+filepath.Join(dir, "r."+f))
		}
		res := runCmd(t, append(args, plan)...)
		if !strings.Contains(res.stdout, "a scrape of http://***@127.0.0.1:1/m failed") {
			t.Errorf("no scrape warning with the URL hidden:\n%s%s", res.stdout, res.stderr)
		}
		outs := []string{res.stdout + res.stderr}
		for _, f := range []string{"json", "junit", "md", "html", "csv"} {
			b, err := os.ReadFile(filepath.Join(dir, "r."+f))
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, string(b))
		}
		for i, out := range outs {
			for _, secret := range []string{"zorkuser", "Zq9Wx"} {
				if strings.Contains(out, secret) {
					t.Errorf("output %d holds %q", i, secret)
				}
			}
		}
	})
}

// pahoAt connects a paho client named id to the broker at url (MQTT 5;
// a session kept for an hour unless clean), with onMessage receiving
// each delivery's topic and payload.
func pahoAt(t *testing.T, url, id string, clean bool, onMessage func(topic string, payload []byte)) *paho.Client {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "mqtt://"), 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: conn, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(pr paho.PublishReceived) (bool, error) {
			if onMessage != nil {
				onMessage(pr.Packet.Topic, pr.Packet.Payload)
			}
			return true, nil
		}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	expiry := uint32(3600)
	cp := &paho.Connect{ClientID: id, CleanStart: clean, KeepAlive: 30}
	if !clean {
		cp.Properties = &paho.ConnectProperties{SessionExpiryInterval: &expiry}
	}
	if _, err := c.Connect(ctx, cp); err != nil {
		t.Fatalf("connect %s: %v", id, err)
	}
	return c
}

// sysRetained reports whether a fresh subscription to topic on the
// Mosquitto at url brings a retained copy. $SYS/broker/version, retained
// without expiry, is subscribed to next: once it arrives, a retained copy
// of topic would have come before it.
func sysRetained(t *testing.T, url, topic string) bool {
	t.Helper()
	var mu sync.Mutex
	seen := false
	version := make(chan struct{}, 1)
	c := pahoAt(t, url, "sys-probe", true, func(got string, _ []byte) {
		switch got {
		case topic:
			mu.Lock()
			seen = true
			mu.Unlock()
		case "$SYS/broker/version":
			select {
			case version <- struct{}{}:
			default:
			}
		}
	})
	defer func() { _ = c.Disconnect(&paho.Disconnect{}) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, f := range []string{topic, "$SYS/broker/version"} {
		if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: f}}}); err != nil {
			t.Fatalf("subscribe to %s: %v", f, err)
		}
	}
	select {
	case <-version:
	case <-ctx.Done():
		t.Fatal("no retained $SYS/broker/version from Mosquitto")
	}
	mu.Lock()
	defer mu.Unlock()
	return seen
}

// TestBrokerCountersIdleMosquitto: Mosquitto 2.0 gives its $SYS messages
// a 60-second expiry and republishes a counter only when it changed, so
// after a minute idle its dropped counter never arrives. A clean run
// still passes broker.dropped == 0: the counter, never published between
// the monitor's subscribing and the live update after the drain, did not
// change, and the Broker section says so.
func TestBrokerCountersIdleMosquitto(t *testing.T) {
	if testing.Short() {
		t.Skip("waits a minute for Mosquitto's retained $SYS copies to expire")
	}
	// It mostly waits: let it wait beside the other parallel tests.
	t.Parallel()
	p := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "sys_interval 1"})
	waitpkg.UntilWithin(t, 90*time.Second, time.Second, "Mosquitto's retained $SYS/broker/publish/messages/dropped to expire", func() bool {
		return !sysRetained(t, p.MQTT, "$SYS/broker/publish/messages/dropped")
	})
	res, top := savedMetrics(t, procPlan(p.MQTT, "  metrics: {sys: true}\n", "broker.dropped == 0"))
	if res.code != 0 {
		t.Fatalf("exit %d, want 0 on a clean run against an idle Mosquitto\n%s%s", res.code, res.stdout, res.stderr)
	}
	if v, ok := top["broker.dropped"]; !ok || v != float64(0) {
		t.Errorf("broker.dropped %v (measured %v), want 0", v, ok)
	}
	if !strings.Contains(res.stdout, "+0 (not republished)") {
		t.Errorf("the Broker section does not say dropped did not change:\n%s", res.stdout)
	}
}

// TestBrokerCountersDefaultInterval: against Mosquitto's default
// sys_interval 10, a run whose broker drops messages (a persistent
// subscriber offline, its queue full) never passes broker.dropped == 0:
// either the update after the drain is waited for and shows the drops,
// or the change is absent with a warning that suggests sys_interval 1.
func TestBrokerCountersDefaultInterval(t *testing.T) {
	t.Parallel()
	p := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "sys_interval 10\nmax_queued_messages 100"})
	off := pahoAt(t, p.MQTT, "offline1", false, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := off.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "fan/#", QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := off.Disconnect(&paho.Disconnect{}); err != nil {
		t.Fatal(err)
	}
	plan := "name: drops\nbroker:\n  url: " + p.MQTT + "\n  metrics: {sys: true}\ngroups:\n" +
		"  - {name: sub, count: 1, subscribe: {topic: \"fan/#\", qos: 1}}\n" +
		"  - {name: pub, count: 10, publish: {topic: fan/%i, qos: 1, every: 20ms}}\n" +
		"duration: 2s\ndrain: 1s\nthresholds:\n  - broker.dropped == 0\n"
	res, top := savedMetrics(t, plan)
	if res.code != 1 {
		t.Fatalf("exit %d, want 1: the broker dropped messages\n%s%s", res.code, res.stdout, res.stderr)
	}
	if v, ok := top["broker.dropped"]; ok {
		if v == float64(0) {
			t.Errorf("broker.dropped 0 while the broker dropped")
		}
	} else if !strings.Contains(res.stdout, "sys_interval 1") {
		t.Errorf("broker.dropped absent without a warning suggesting sys_interval 1:\n%s", res.stdout)
	}
}

// TestBrokerCommandSysInterval: `mqplan broker` refreshes $SYS every
// second by default, so a plan reading it gets a live update after its
// drain; --sys-interval takes whole seconds from 1s to 1h.
func TestBrokerCommandSysInterval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int // of the broker command; 0: it runs
	}{
		{name: "default"},
		{name: "two seconds", args: []string{"--sys-interval", "2s"}},
		{name: "zero", args: []string{"--sys-interval", "0s"}, code: 2},
		{name: "a fraction", args: []string{"--sys-interval", "1500ms"}, code: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"broker", "--listen", "127.0.0.1:0"}, tt.args...)
			if tt.code != 0 {
				if res := runCmd(t, args...); res.code != tt.code || !strings.Contains(res.stderr, "--sys-interval") {
					t.Errorf("exit %d, want %d naming --sys-interval\n%s", res.code, tt.code, res.stderr)
				}
				return
			}
			b := startCmd(t, args...)
			urls, _ := listening(t, b.stderr, 1)
			res := runCmd(t, "run", "--quiet", "--out", "table=-", writePlan(t, procPlan(urls[0], "  metrics: {sys: true}\n")))
			if res.code != 0 || !strings.Contains(res.stdout, "| publish_received |") {
				t.Fatalf("exit %d, want 0 with the Broker section\n%s%s", res.code, res.stdout, res.stderr)
			}
			if strings.Contains(res.stdout, "no live $SYS update") {
				t.Errorf("no live $SYS update after the drain:\n%s", res.stdout)
			}
			b.signal(t, syscall.SIGINT)
			if code := b.wait(t, 10*time.Second); code != 0 {
				t.Errorf("broker exit %d", code)
			}
		})
	}
}
