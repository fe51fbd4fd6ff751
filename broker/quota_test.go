package broker

import (
	"github.com/mqplan/mqplan/internal/wait"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// TestBrokerSendQuotaWorkaround: an MQTT 5 subscriber with Receive Maximum
// 8 and a QoS 1 backlog of 2,000 messages receives all of them. Without the
// workaround mochi v2.7.9 stops after about 2 × 8; that case proves the test
// exercises the bug (if it fails, mochi was fixed and sendQuotaHook may go).
func TestBrokerSendQuotaWorkaround(t *testing.T) {
	const (
		receiveMax = 8
		backlog    = 2000
	)
	cases := []struct {
		name       string
		workaround bool
	}{
		{"with workaround all arrive", true},
		{"mochi bug without workaround", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := btStart(t, Options{}, tc.workaround)
			release := make(chan struct{})
			var once sync.Once
			unblock := func() { once.Do(func() { close(release) }) }

			inbox := newBTInbox()
			// The first delivery blocks the subscriber until the whole
			// backlog is published, so far more than Receive Maximum
			// messages are unacknowledged.
			inbox.handler = func(*paho.Publish) { <-release }
			sub := btConnect(t, b, "slow-sub", receiveMax, inbox)
			t.Cleanup(unblock) // runs before the client's Disconnect
			btSubscribe(t, sub, "q/1", 1)

			pub := btConnect(t, b, "pub", 64, nil)
			for i := 1; i <= backlog; i++ {
				btPublish(t, pub, "q/1", 1, btNum(i, time.Now()))
			}
			unblock()

			if tc.workaround {
				inbox.waitN(t, backlog)
				got, _ := inbox.snapshot()
				for i, p := range got {
					if btNumOf(p) != i+1 {
						t.Fatalf("message %d is number %d: want in order", i+1, btNumOf(p))
					}
				}
				wait.Until(t, "inflight to drain", func() bool { return btInflight(b) == 0 })
				if s := b.Stats(); s.MessagesDropped != 0 || s.InflightDropped != 0 {
					t.Errorf("broker dropped messages: %+v", s)
				}
				return
			}
			// mochi sends N, then one parked message per PUBACK (N more),
			// then nothing: wait for the 2N, then give it time to go on.
			inbox.waitN(t, 2*receiveMax)
			quiet := time.NewTimer(500 * time.Millisecond)
			<-quiet.C
			got := inbox.len()
			t.Logf("without the workaround: %d of %d delivered", got, backlog)
			if got >= backlog {
				t.Fatalf("all %d delivered without the workaround: mochi's send-quota bug seems fixed; revisit sendQuotaHook", got)
			}
			if got > 4*receiveMax {
				t.Errorf("delivered %d, expected the stall near 2 × %d", got, receiveMax)
			}
		})
	}
}
