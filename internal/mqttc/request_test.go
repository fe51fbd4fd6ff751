package mqttc

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/eclipse/paho.golang/packets"
)

// TestPublishRequestMatchesPaho checks the request properties mqplan
// writes (response topic, correlation data) against paho.golang's
// decoder, and that Respond answers on the response topic with the
// correlation data copied.
func TestPublishRequestMatchesPaho(t *testing.T) {
	tests := []struct {
		name  string
		topic string
		qos   byte
		req   Request[string]
	}{
		{"qos0 both", "cmd/1", 0, Request[string]{ResponseTopic: "resp/a", Correlation: []byte{1, 2, 3, 4}}},
		{"qos1 both", "cmd/2", 1, Request[string]{ResponseTopic: "resp/b", Correlation: bytes.Repeat([]byte{9}, 16)}},
		{"response topic only", "cmd/3", 1, Request[string]{ResponseTopic: "r"}},
		{"properties past 127 bytes (multi-byte property length)", "cmd/4", 2, Request[string]{ResponseTopic: strings.Repeat("r/", 100), Correlation: bytes.Repeat([]byte{5}, 200)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, broker := pipeConn(t, Handlers{})
			payload := []byte("0123456789abcdef")
			errc := make(chan error, 1)
			go func() { errc <- c.PublishRequest(context.Background(), tt.topic, tt.qos, payload, 0, tt.req) }()
			cp, err := packets.ReadPacket(broker)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			p := cp.Content.(*packets.Publish)
			if p.Topic != tt.topic || p.QoS != tt.qos || !bytes.Equal(p.Payload, payload) {
				t.Errorf("decoded topic %q qos %d payload %q", p.Topic, p.QoS, p.Payload)
			}
			if p.Properties.ResponseTopic != tt.req.ResponseTopic || !bytes.Equal(p.Properties.CorrelationData, tt.req.Correlation) {
				t.Errorf("decoded response topic %q correlation %x", p.Properties.ResponseTopic, p.Properties.CorrelationData)
			}
			// The answer: to the response topic, QoS 0, correlation copied.
			go func() {
				errc <- c.Respond(Request[[]byte]{ResponseTopic: []byte(tt.req.ResponseTopic), Correlation: tt.req.Correlation}, []byte("ok"))
			}()
			cp, err = packets.ReadPacket(broker)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			a := cp.Content.(*packets.Publish)
			if a.Topic != tt.req.ResponseTopic || a.QoS != 0 || string(a.Payload) != "ok" || !bytes.Equal(a.Properties.CorrelationData, tt.req.Correlation) || a.Properties.ResponseTopic != "" {
				t.Errorf("answer topic %q qos %d payload %q correlation %x response topic %q", a.Topic, a.QoS, a.Payload, a.Properties.CorrelationData, a.Properties.ResponseTopic)
			}
		})
	}
}

// TestPublishRequestNeedsMQTT5 checks that a request on an MQTT 3.1.1
// connection is refused rather than sent without its properties.
func TestPublishRequestNeedsMQTT5(t *testing.T) {
	c, _ := pipeConn(t, Handlers{})
	c.version = Version311
	if err := c.PublishRequest(context.Background(), "cmd", 0, nil, 0, Request[string]{ResponseTopic: "r"}); err == nil {
		t.Fatal("a request was sent at MQTT 3.1.1")
	}
}

// TestReaderHandsRequests feeds the reader PUBLISH packets encoded by
// paho.golang with every kind of property a broker may forward, and
// checks which reach Handlers.Request (with the response topic and
// correlation data read in place: requests and answers) and which
// Handlers.Deliver.
func TestReaderHandsRequests(t *testing.T) {
	type got struct {
		payload, topic, corr string
	}
	var reqs, plain []got
	c, broker := pipeConn(t, Handlers{
		Deliver: func(p []byte, _ bool) { plain = append(plain, got{payload: string(p)}) },
		Request: func(p []byte, _ bool, r Request[[]byte]) {
			reqs = append(reqs, got{string(p), string(r.ResponseTopic), string(r.Correlation)})
		},
	})
	go c.readLoop()
	expiry, format, subID := uint32(60), byte(1), 300
	send := func(payload string, props *packets.Properties) {
		t.Helper()
		cp := packets.NewControlPacket(packets.PUBLISH)
		p := cp.Content.(*packets.Publish)
		p.Topic, p.Payload, p.Properties = "cmd/x", []byte(payload), props
		if _, err := cp.WriteTo(broker); err != nil {
			t.Fatal(err)
		}
	}
	send("no properties", &packets.Properties{})
	send("all properties", &packets.Properties{
		PayloadFormat: &format, MessageExpiry: &expiry, ContentType: "text/plain", ResponseTopic: "resp/1",
		CorrelationData: []byte("corr-1"), SubscriptionIdentifier: &subID, User: []packets.User{{Key: "k", Value: "v"}},
	})
	send("correlation only", &packets.Properties{CorrelationData: []byte("c")})
	send("response topic only", &packets.Properties{ResponseTopic: "resp/2"})
	// A PINGREQ cannot come from a broker; a DISCONNECT ends the reader so
	// that what it handed over can be read without a race.
	dc := packets.NewControlPacket(packets.DISCONNECT)
	if _, err := dc.WriteTo(broker); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, "the connection to end on DISCONNECT", c.done)
	<-c.readerDone
	wantReqs := []got{{"all properties", "resp/1", "corr-1"}, {"correlation only", "", "c"}, {"response topic only", "resp/2", ""}}
	wantPlain := []got{{payload: "no properties"}}
	if len(reqs) != len(wantReqs) || reqs[0] != wantReqs[0] || reqs[1] != wantReqs[1] || reqs[2] != wantReqs[2] {
		t.Errorf("requests %+v, want %+v", reqs, wantReqs)
	}
	if len(plain) != len(wantPlain) || plain[0] != wantPlain[0] {
		t.Errorf("plain deliveries %+v, want %+v", plain, wantPlain)
	}
}

// TestPublishRequestMalformed checks that properties that run past their
// length are refused, never read out of bounds.
func TestPublishRequestMalformed(t *testing.T) {
	tests := []struct {
		name  string
		props []byte
		ok    bool
	}{
		{"empty", nil, true},
		{"string length past the end", []byte{PropResponseTopic, 0, 9, 'a'}, false},
		{"truncated length", []byte{PropCorrelationData, 0}, false},
		{"unknown property", []byte{0x7F}, false},
		{"truncated expiry", []byte{PropMessageExpiry, 0, 0}, false},
		{"user property missing its value", []byte{PropUserProperty, 0, 1, 'k'}, false},
		{"bad subscription id", []byte{PropSubscriptionID, 0x80}, false},
		{"well formed", []byte{PropResponseTopic, 0, 1, 'r', PropCorrelationData, 0, 2, 'c', 'd'}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := publishRequest(tt.props); ok != tt.ok {
				t.Errorf("ok = %v, want %v", ok, tt.ok)
			}
		})
	}
}

// TestRequestPathsDoNotAllocate keeps the request/response encoders and
// the property reader allocation-free once the buffer has grown.
func TestRequestPathsDoNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 256)
	corr := make([]byte, 16)
	payload := make([]byte, 32)
	rt := []byte("resp/device-1")
	props := []byte{PropResponseTopic, 0, 1, 'r', PropCorrelationData, 0, 1, 'c'}
	var r Request[[]byte]
	n := testing.AllocsPerRun(1000, func() {
		buf = appendPublishProps(buf[:0], Version5, "cmd/1", 1, false, false, 7, payload, Request[string]{ResponseTopic: "resp/device-1", Correlation: corr})
		buf = appendPublishProps(buf[:0], Version5, rt, 0, false, false, 0, payload, Request[[]byte]{Correlation: corr})
		r, _ = publishRequest(props)
	})
	if n != 0 || len(r.ResponseTopic) != 1 {
		t.Errorf("%v allocations a request/answer", n)
	}
}
