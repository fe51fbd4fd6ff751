package brokerstat

import (
	"strings"
	"testing"
)

// msg is one $SYS message.
type msg struct{ topic, payload string }

// TestSysCounters: the $SYS topics of Mosquitto 2.x, mochi and EMQX
// normalise onto the same counters; unknown topics and payloads that are
// not whole numbers are ignored.
func TestSysCounters(t *testing.T) {
	tests := []struct {
		name string
		msgs []msg
		want map[Counter]int64
	}{
		{name: "mosquitto 2", msgs: []msg{
			{"$SYS/broker/version", "mosquitto version 2.0.11"},
			{"$SYS/broker/uptime", "12 seconds"},
			{"$SYS/broker/clients/connected", "5"},
			{"$SYS/broker/messages/received", "900"}, // every packet: not PUBLISH
			{"$SYS/broker/messages/sent", "800"},
			{"$SYS/broker/publish/messages/received", "120"},
			{"$SYS/broker/publish/messages/sent", "240"},
			{"$SYS/broker/publish/messages/dropped", "0"},
			{"$SYS/broker/heap/current", "52344"},
			{"$SYS/broker/subscriptions/count", "3"},
			{"$SYS/broker/load/messages/received/1min", "42.10"},
		}, want: map[Counter]int64{Clients: 5, PublishReceived: 120, PublishSent: 240, Dropped: 0, MemoryBytes: 52344, Subscriptions: 3}},
		{name: "mosquitto later value wins", msgs: []msg{
			{"$SYS/broker/publish/messages/received", "1"},
			{"$SYS/broker/publish/messages/received", "7"},
		}, want: map[Counter]int64{PublishReceived: 7}},
		{name: "mochi", msgs: []msg{
			{"$SYS/broker/version", "2.7.9"},
			{"$SYS/broker/clients/connected", "2"},
			{"$SYS/broker/packets/received", "50"},
			{"$SYS/broker/messages/received", "10"},
			{"$SYS/broker/messages/sent", "20"},
			{"$SYS/broker/messages/dropped", "1"},
			{"$SYS/broker/system/memory", "4194304"},
			{"$SYS/broker/subscriptions", "4"},
		}, want: map[Counter]int64{Clients: 2, PublishReceived: 10, PublishSent: 20, Dropped: 1, MemoryBytes: 4194304, Subscriptions: 4}},
		{name: "emqx summed over nodes", msgs: []msg{
			{"$SYS/brokers/emqx@10.0.0.1/stats/connections/count", "3"},
			{"$SYS/brokers/emqx@10.0.0.2/stats/connections/count", "4"},
			{"$SYS/brokers/emqx@10.0.0.1/metrics/messages/received", "100"},
			{"$SYS/brokers/emqx@10.0.0.2/metrics/messages/received", "50"},
			{"$SYS/brokers/emqx@10.0.0.1/metrics/messages/sent", "70"},
			{"$SYS/brokers/emqx@10.0.0.1/metrics/messages/dropped", "2"},
			{"$SYS/brokers/emqx@10.0.0.1/stats/subscriptions/count", "9"},
			{"$SYS/brokers/emqx@10.0.0.1/clients/c1/connected", `{"username":"u"}`},
			{"$SYS/brokers/emqx@10.0.0.1/version", "5.8.0"},
		}, want: map[Counter]int64{Clients: 7, PublishReceived: 150, PublishSent: 70, Dropped: 2, Subscriptions: 9}},
		{name: "ignored", msgs: []msg{
			{"$SYS/broker/clients/connected", "-3"},
			{"$SYS/broker/publish/messages/sent", "1.5"},
			{"$SYS/broker/publish/messages/received", "99999999999999999999"},
			{"$SYS/broker/subscriptions/count", strings.Repeat("1", MaxSysPayload+1)},
			{"$SYS/brokers//stats/connections/count", "1"},
			{"other/topic", "1"},
		}, want: map[Counter]int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Sys
			for _, m := range tt.msgs {
				s.Message(m.topic, []byte(m.payload))
			}
			checkCounters(t, s.Counters(), tt.want)
		})
	}
}

// checkCounters compares a reading with the counters it should hold.
func checkCounters(t *testing.T, got Counters, want map[Counter]int64) {
	t.Helper()
	for c := range NumCounters {
		v, ok := got.Get(c)
		w, wok := want[c]
		if ok != wok || v != w {
			t.Errorf("%s = %d (reported %v), want %d (reported %v)", c, v, ok, w, wok)
		}
	}
	if got.Sampled() != (len(want) > 0) {
		t.Errorf("Sampled() = %v with %d counters", got.Sampled(), len(want))
	}
}

// TestCounterNames: every counter has a name that maps back to it.
func TestCounterNames(t *testing.T) {
	for c := range NumCounters {
		back, ok := CounterByName(c.String())
		if !ok || back != c {
			t.Errorf("%d: name %q maps back to %d, %v", c, c, back, ok)
		}
	}
	if _, ok := CounterByName("nope"); ok {
		t.Error("an unknown name maps to a counter")
	}
}

// FuzzSysMessage: no $SYS message makes Sys panic, and a counter it
// reports is never negative.
func FuzzSysMessage(f *testing.F) {
	f.Add("$SYS/broker/publish/messages/sent", []byte("12"))
	f.Add("$SYS/brokers/n1/metrics/messages/received", []byte(" 7 "))
	f.Add("$SYS/broker/uptime", []byte("3 seconds"))
	f.Fuzz(func(t *testing.T, topic string, payload []byte) {
		var s Sys
		s.Message(topic, payload)
		if c, ok := s.Message(topic, payload); ok && (c < 0 || c >= NumCounters) {
			t.Fatalf("counter %d", c)
		}
		cs := s.Counters()
		for c := range NumCounters {
			if v, ok := cs.Get(c); ok && v < 0 {
				t.Fatalf("%s = %d", c, v)
			}
		}
	})
}
