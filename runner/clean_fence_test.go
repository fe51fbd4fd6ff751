package runner

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/internal/wait"
)

// TestCleanFenceOrder checks, on the brokers mqplan is tested with, the
// property the end of a clean session window rests on (clean_boundary.go,
// trap b): a QoS 1 PUBLISH that a subscriber sends on a topic only it
// subscribes to comes back behind every delivery the broker acknowledged
// to a publisher before the fence was sent, including deliveries the
// broker holds back beyond the subscriber's in-flight window (Receive
// Maximum 64 at MQTT 5, Mosquitto's max_inflight_messages 20 at 3.1.1).
//
// The subscriber's reader is held on its first delivery until the fence
// is sent, so that everything else is still with the broker or in the
// socket: the backlog is certain, not left to timing. The test also
// sends a PINGREQ at the same point and logs how many deliveries preceded
// its PINGRESP: on Mosquitto at MQTT 5 the PINGRESP overtakes the held
// deliveries, which is why a PINGREQ is not the fence.
//
// The fence topic starts with $ so that no plan filter can match it: a
// client subscribed to # beside them gets the data and never the fence
// ([MQTT-4.7.2-1]), and both brokers let a client publish there.
func TestCleanFenceOrder(t *testing.T) {
	const n = 300
	embedded := func(t *testing.T) string {
		b, err := broker.Start(broker.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close(time.Second) })
		return b.URL()
	}
	mosquitto := func(conf string) func(t *testing.T) string {
		return func(t *testing.T) string { return mosquittotest.StartWith(t, mosquittotest.Options{Config: conf}).MQTT }
	}
	cases := []struct {
		name    string
		url     func(t *testing.T) string
		version byte
	}{
		{"embedded v5", embedded, mqttc.Version5},
		{"embedded v3.1.1", embedded, mqttc.Version311},
		{"mosquitto v5 receive maximum 64", mosquitto(""), mqttc.Version5},
		{"mosquitto v3.1.1 max_inflight_messages 20", mosquitto("max_inflight_messages 20"), mqttc.Version311},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			targets, err := mqttc.NewTargets([]string{tc.url(t)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			start := time.Now()
			now := func() int64 { return int64(time.Since(start)) }
			opts := func(id string) mqttc.Options {
				return mqttc.Options{ClientID: id, CleanStart: true, Version: tc.version, Timeout: 5 * time.Second}
			}
			var read, fenceAt atomic.Int64
			fenceAt.Store(-1)
			hold := make(chan struct{})
			var held atomic.Bool
			sub, err := mqttc.Dial(ctx, targets[0], opts("fence-sub"), now, mqttc.Handlers{Message: func(topic, _ []byte, _ bool) {
				if string(topic) == "$mqplan/fence/fence-sub" {
					fenceAt.Store(read.Load())
					return
				}
				if !held.Swap(true) {
					<-hold
				}
				read.Add(1)
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(sub.Close)
			subs := []mqttc.Subscription{{Filter: "fence/data", QoS: 1}, {Filter: "$mqplan/fence/fence-sub", QoS: 1}}
			if _, err := sub.Subscribe(ctx, subs); err != nil {
				t.Fatal(err)
			}
			var watched, watchedFences atomic.Int64
			watcher, err := mqttc.Dial(ctx, targets[0], opts("fence-watcher"), now, mqttc.Handlers{Message: func(topic, _ []byte, _ bool) {
				switch string(topic) {
				case "$mqplan/fence/fence-sub":
					watchedFences.Add(1)
				case "fence/done":
					watched.Store(-1 << 40)
				default:
					watched.Add(1)
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(watcher.Close)
			if _, err := watcher.Subscribe(ctx, []mqttc.Subscription{{Filter: "#", QoS: 1}}); err != nil {
				t.Fatal(err)
			}
			pub, err := mqttc.Dial(ctx, targets[0], opts("fence-pub"), now, mqttc.Handlers{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pub.Close)
			payload := make([]byte, 64)
			for i := 0; i < n; i++ {
				if err := pub.Publish(ctx, "fence/data", 1, false, payload, mqttc.Token(i+1)); err != nil {
					t.Fatal(err)
				}
			}
			wait.Until(t, "the publisher's acknowledgements", func() bool { return pub.Pending() == 0 })
			wait.Until(t, "the first delivery", held.Load)
			sub.Probe()
			if err := sub.Publish(ctx, "$mqplan/fence/fence-sub", 1, false, []byte("fence"), 1); err != nil {
				t.Fatal(err)
			}
			close(hold)
			pingAt := int64(-1)
			wait.Until(t, "the fence back", func() bool {
				if pingAt < 0 && sub.ProbeAnswered() {
					pingAt = read.Load() // at most the deliveries read before PINGRESP
				}
				return fenceAt.Load() >= 0
			})
			if got := fenceAt.Load(); got != n {
				t.Errorf("the fence came back after %d of the %d deliveries acknowledged before it was sent", got, n)
			}
			// A marker published after the fence came back reaches the
			// watcher behind the fence, had it been routed there.
			if err := pub.Publish(ctx, "fence/done", 1, false, payload, n+1); err != nil {
				t.Fatal(err)
			}
			wait.Until(t, "the marker at the # subscriber", func() bool { return watched.Load() < 0 })
			if got := watchedFences.Load(); got != 0 {
				t.Errorf("the # subscriber got %d fences", got)
			}
			t.Logf("PINGRESP read after at most %d of %d deliveries acknowledged before the PINGREQ", pingAt, n)
		})
	}
}
