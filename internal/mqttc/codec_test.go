package mqttc

import (
	"bytes"
	"fmt"
	"github.com/mqplan/mqplan/internal/wait"
	"io"
	"strings"
	"testing"
	"time"

	mochi "github.com/mochi-mqtt/server/v2/packets"
)

// The encoders of MQTT 3.1 and 3.1.1 are checked against mochi-mqtt's
// packets package, which decodes both (and validates them as a broker
// does); the MQTT 5 packets are checked against paho.golang's in
// conn_test.go. mochi is a test dependency only: the client itself must
// not import a broker.

// decodeMochi decodes one whole packet of protocol level version with
// mochi's decoder, as mochi's server reads it: the fixed header (whose
// flags it checks against the packet type), the remaining length, then
// the packet's own decoder. Bytes past the packet fail the test.
func decodeMochi(t *testing.T, b []byte, version byte) mochi.Packet {
	t.Helper()
	r := bytes.NewReader(b)
	hb, err := r.ReadByte()
	if err != nil {
		t.Fatal(err)
	}
	pk := mochi.Packet{ProtocolVersion: version}
	if err := pk.FixedHeader.Decode(hb); err != nil {
		t.Fatalf("fixed header %#02x: %v", hb, err)
	}
	n, _, err := mochi.DecodeLength(r)
	if err != nil {
		t.Fatalf("remaining length: %v", err)
	}
	pk.FixedHeader.Remaining = n
	body, _ := io.ReadAll(r)
	if len(body) != n {
		t.Fatalf("remaining length %d, but %d bytes follow the fixed header", n, len(body))
	}
	var decode func([]byte) error
	switch pk.FixedHeader.Type {
	case mochi.Connect:
		decode = pk.ConnectDecode
	case mochi.Publish:
		decode = pk.PublishDecode
	case mochi.Puback:
		decode = pk.PubackDecode
	case mochi.Pubrec:
		decode = pk.PubrecDecode
	case mochi.Pubrel:
		decode = pk.PubrelDecode
	case mochi.Pubcomp:
		decode = pk.PubcompDecode
	case mochi.Subscribe:
		decode = pk.SubscribeDecode
	case mochi.Pingreq:
		decode = pk.PingreqDecode
	case mochi.Disconnect:
		decode = pk.DisconnectDecode
	default:
		t.Fatalf("packet type %d is not one the client writes", pk.FixedHeader.Type)
	}
	if err := decode(body); err != nil {
		t.Fatalf("mochi cannot decode %x: %v", b, err)
	}
	return pk
}

// readRaw reads one whole packet off r, as it came, reading no further:
// the first byte, the remaining length a byte at a time, then the body.
func readRaw(t *testing.T, r io.Reader) []byte {
	t.Helper()
	var pkt []byte
	one := make([]byte, 1)
	for i := 0; i < 5; i++ {
		if _, err := io.ReadFull(r, one); err != nil {
			t.Fatal(err)
		}
		pkt = append(pkt, one[0])
		if i > 0 && one[0]&0x80 == 0 {
			break
		}
	}
	n, _, ok := VBIAt(pkt, 1)
	if !ok {
		t.Fatalf("malformed remaining length in %x", pkt)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatal(err)
	}
	return append(pkt, body...)
}

// TestConnect311MatchesMochi checks every MQTT 3.1 and 3.1.1 CONNECT the
// client writes against mochi's decoder and its broker-side validation.
func TestConnect311MatchesMochi(t *testing.T) {
	tests := []struct {
		name    string
		version byte
		o       Options
	}{
		{"3.1.1 client id only", Version311, Options{ClientID: "c1"}},
		{"3.1.1 clean start and keepalive", Version311, Options{ClientID: "pub-1", CleanStart: true, Keepalive: 30 * time.Second}},
		{"3.1.1 will QoS 1 retained, user and password", Version311, Options{ClientID: "sub-7", Username: "alice", Password: []byte("s3cret"),
			Will: &Will{Topic: "wills/sub-7", Payload: []byte("gone"), QoS: 1, Retain: true}}},
		{"3.1.1 will QoS 2 not retained", Version311, Options{ClientID: "w", Will: &Will{Topic: "w", Payload: []byte{0, 1, 2}, QoS: 2}}},
		{"3.1.1 will QoS 0", Version311, Options{ClientID: "w0", CleanStart: true, Will: &Will{Topic: "w/0", Payload: []byte("x")}}},
		{"3.1.1 user without password", Version311, Options{ClientID: "u", Username: "bob"}},
		{"3.1.1 longest keepalive (65535 s)", Version311, Options{ClientID: "k", Keepalive: 65535 * time.Second}},
		{"3.1.1 empty client id", Version311, Options{CleanStart: true}},
		{"3.1.1 long client id, binary password (multi-byte length)", Version311, Options{ClientID: strings.Repeat("x", 300), Username: "u", Password: []byte{0, 1, 0xfe, 0xff}}},
		{"3.1 (MQIsdp)", Version31, Options{ClientID: "c31", CleanStart: true, Keepalive: 10 * time.Second}},
		{"3.1 will, user and password", Version31, Options{ClientID: "c31w", Username: "alice", Password: []byte("pw"),
			Will: &Will{Topic: "wills/c31w", Payload: []byte("bye"), QoS: 1, Retain: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pk := decodeMochi(t, appendConnect311(nil, tt.version, tt.o), tt.version)
			if code := pk.ConnectValidate(); code != mochi.CodeSuccess {
				t.Fatalf("mochi refuses the CONNECT: %v", code)
			}
			wantName := "MQTT"
			if tt.version == Version31 {
				wantName = "MQIsdp"
			}
			c := pk.Connect
			if string(c.ProtocolName) != wantName || pk.ProtocolVersion != tt.version {
				t.Errorf("protocol %q level %d, want %q level %d", c.ProtocolName, pk.ProtocolVersion, wantName, tt.version)
			}
			if c.ClientIdentifier != tt.o.ClientID || c.Clean != tt.o.CleanStart || time.Duration(c.Keepalive)*time.Second != tt.o.Keepalive {
				t.Errorf("client id %q clean %v keepalive %ds, want %q %v %v", c.ClientIdentifier, c.Clean, c.Keepalive, tt.o.ClientID, tt.o.CleanStart, tt.o.Keepalive)
			}
			if c.UsernameFlag != (tt.o.Username != "") || string(c.Username) != tt.o.Username {
				t.Errorf("username flag %v %q, want %q", c.UsernameFlag, c.Username, tt.o.Username)
			}
			if c.PasswordFlag != (len(tt.o.Password) > 0) || !bytes.Equal(c.Password, tt.o.Password) {
				t.Errorf("password flag %v %x, want %x", c.PasswordFlag, c.Password, tt.o.Password)
			}
			w := tt.o.Will
			if c.WillFlag != (w != nil) {
				t.Fatalf("will flag %v, want %v", c.WillFlag, w != nil)
			}
			if w != nil && (c.WillTopic != w.Topic || !bytes.Equal(c.WillPayload, w.Payload) || c.WillQos != w.QoS || c.WillRetain != w.Retain) {
				t.Errorf("will %q %x QoS %d retain %v, want %+v", c.WillTopic, c.WillPayload, c.WillQos, c.WillRetain, *w)
			}
		})
	}
}

// TestSubscribe311MatchesMochi checks the MQTT 3.1/3.1.1 SUBSCRIBE: its
// fixed flags, packet id and one QoS byte a filter (the MQTT 5 options
// are not sent).
func TestSubscribe311MatchesMochi(t *testing.T) {
	subs := []Subscription{
		{Filter: "a/#", QoS: 1, NoLocal: true, RetainAsPublished: true, RetainHandling: 2},
		{Filter: "b/+/c", QoS: 2},
		{Filter: strings.Repeat("long/", 40) + "x", QoS: 0},
	}
	for _, version := range []byte{Version31, Version311} {
		t.Run(protocolName(version), func(t *testing.T) {
			pk := decodeMochi(t, appendSubscribe311(nil, subscribeID, subs), version)
			if code := pk.SubscribeValidate(); code != mochi.CodeSuccess {
				t.Fatalf("mochi refuses the SUBSCRIBE: %v", code)
			}
			if pk.PacketID != subscribeID || len(pk.Filters) != len(subs) {
				t.Fatalf("packet id %d, %d filters; want %d, %d", pk.PacketID, len(pk.Filters), subscribeID, len(subs))
			}
			for i, f := range pk.Filters {
				if f.Filter != subs[i].Filter || f.Qos != subs[i].QoS || f.NoLocal || f.RetainAsPublished || f.RetainHandling != 0 {
					t.Errorf("filter %d: %+v, want %q at QoS %d and no options", i, f, subs[i].Filter, subs[i].QoS)
				}
			}
		})
	}
}

// TestPublishMatchesMochi checks PUBLISH at every protocol level: flags,
// topic, packet id, and a payload whose length needs 1, 2 and 3 bytes of
// remaining length.
func TestPublishMatchesMochi(t *testing.T) {
	tests := []struct {
		name    string
		topic   string
		qos     byte
		retain  bool
		dup     bool
		id      uint16
		payload []byte
	}{
		{"qos0", "a/b", 0, false, false, 0, []byte("0123456789abcdef")},
		{"qos0 empty payload", "a/b", 0, false, false, 0, nil},
		{"qos1 retained", "bench/1", 1, true, false, 2, bytes.Repeat([]byte{7}, 1000)},
		{"qos1 resent (dup)", "bench/1", 1, false, true, 257, []byte{1}},
		{"qos2 dup retained, highest id", "q/2", 2, true, true, 0xffff, []byte("x")},
		{"long topic, payload past 16383 bytes", strings.Repeat("t/", 200) + "x", 1, false, false, 9, bytes.Repeat([]byte{9}, 20000)},
	}
	for _, version := range []byte{Version31, Version311, Version5} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("v%d/%s", version, tt.name), func(t *testing.T) {
				pk := decodeMochi(t, appendPublish(nil, version, tt.topic, tt.qos, tt.retain, tt.dup, tt.id, tt.payload), version)
				if code := pk.PublishValidate(0); code != mochi.CodeSuccess {
					t.Fatalf("mochi refuses the PUBLISH: %v", code)
				}
				fh := pk.FixedHeader
				if fh.Qos != tt.qos || fh.Retain != tt.retain || fh.Dup != tt.dup || pk.PacketID != tt.id {
					t.Errorf("QoS %d retain %v dup %v id %d, want %d %v %v %d", fh.Qos, fh.Retain, fh.Dup, pk.PacketID, tt.qos, tt.retain, tt.dup, tt.id)
				}
				if pk.TopicName != tt.topic || !bytes.Equal(pk.Payload, tt.payload) {
					t.Errorf("topic %q payload %d bytes, want %q %d bytes", pk.TopicName, len(pk.Payload), tt.topic, len(tt.payload))
				}
			})
		}
	}
}

// TestAcksMatchMochi checks the 4-byte acknowledgements (PUBREL with its
// fixed flags 0010), PINGREQ and DISCONNECT.
func TestAcksMatchMochi(t *testing.T) {
	for _, version := range []byte{Version31, Version311, Version5} {
		for _, typ := range []byte{TypePuback, TypePubrec, TypePubrel, TypePubcomp} {
			t.Run(fmt.Sprintf("v%d/%s", version, mochi.PacketNames[typ]), func(t *testing.T) {
				pk := decodeMochi(t, appendAck(nil, typ, 0x1234), version)
				if pk.FixedHeader.Type != typ || pk.PacketID != 0x1234 || pk.ReasonCode != 0 {
					t.Errorf("type %d id %#x reason %#x, want %d %#x 0", pk.FixedHeader.Type, pk.PacketID, pk.ReasonCode, typ, 0x1234)
				}
			})
		}
		for _, tc := range []struct {
			name string
			b    []byte
			typ  byte
		}{{"PINGREQ", pingreqPacket[:], mochi.Pingreq}, {"DISCONNECT", disconnectPacket[:], mochi.Disconnect}} {
			t.Run(fmt.Sprintf("v%d/%s", version, tc.name), func(t *testing.T) {
				pk := decodeMochi(t, tc.b, version)
				if pk.FixedHeader.Type != tc.typ || pk.FixedHeader.Remaining != 0 || pk.ReasonCode != 0 {
					t.Errorf("type %d remaining %d reason %#x", pk.FixedHeader.Type, pk.FixedHeader.Remaining, pk.ReasonCode)
				}
			})
		}
	}
}

// TestVBI checks the variable byte integer at each length boundary
// against mochi's decoder, and ReadVBI and VBIAt against each other.
func TestVBI(t *testing.T) {
	tests := []struct {
		name string
		n    int
		size int
	}{
		{"zero", 0, 1}, {"largest of 1 byte", 127, 1}, {"smallest of 2", 128, 2},
		{"largest of 2", 16383, 2}, {"smallest of 3", 16384, 3}, {"largest of 3", 2097151, 3},
		{"smallest of 4", 2097152, 4}, {"largest", 268435455, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := AppendVBI([]byte{0xAA}, tt.n)[1:]
			if len(b) != tt.size {
				t.Errorf("%d encodes in %d bytes (%x), want %d", tt.n, len(b), b, tt.size)
			}
			if got, _, err := mochi.DecodeLength(bytes.NewReader(b)); err != nil || got != tt.n {
				t.Errorf("mochi decodes %x as %d (%v), want %d", b, got, err, tt.n)
			}
			if got, err := ReadVBI(bytes.NewReader(b)); err != nil || got != tt.n {
				t.Errorf("ReadVBI(%x) = %d, %v", b, got, err)
			}
			if got, size, ok := VBIAt(append([]byte{1, 2}, b...), 2); !ok || got != tt.n || size != tt.size {
				t.Errorf("VBIAt = %d, %d, %v", got, size, ok)
			}
		})
	}
	for _, bad := range [][]byte{{0x80, 0x80, 0x80, 0x80, 0x01}, {0xff}, {}} {
		if _, err := ReadVBI(bytes.NewReader(bad)); err == nil {
			t.Errorf("ReadVBI(%x) succeeded", bad)
		}
		if _, _, ok := VBIAt(bad, 0); ok {
			t.Errorf("VBIAt(%x) succeeded", bad)
		}
	}
}

// TestReaderHandlesMochiPackets311 feeds the reader of an MQTT 3.1.1
// connection packets as mochi, a 3.1.1 broker, encodes them: deliveries
// at every QoS and their acknowledgements, acks of the client's own
// publishes, a SUBACK and a PINGRESP.
func TestReaderHandlesMochiPackets311(t *testing.T) {
	var got [][]byte
	var retained []bool
	var acks []Ack
	c, broker := pipeConn(t, Handlers{
		Deliver: func(p []byte, r bool) { got, retained = append(got, bytes.Clone(p)), append(retained, r) },
		Acked:   func(a Ack) { acks = append(acks, a) },
	})
	c.version = Version311
	send := func(pk mochi.Packet, encode func(*bytes.Buffer) error) {
		t.Helper()
		var b bytes.Buffer
		if err := encode(&b); err != nil {
			t.Fatal(err)
		}
		if _, err := broker.Write(b.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(typ byte, id uint16) {
		t.Helper()
		b := make([]byte, 4)
		if _, err := io.ReadFull(broker, b); err != nil {
			t.Fatal(err)
		}
		pk := decodeMochi(t, b, Version311)
		if pk.FixedHeader.Type != typ || pk.PacketID != id {
			t.Fatalf("got %x, want packet type %d id %d", b, typ, id)
		}
	}
	// Two publishes of the client's own in flight, so that the acks match.
	errc := make(chan error, 2)
	go func() {
		errc <- c.Publish(t.Context(), "x", 1, false, []byte("one"), 1)
		errc <- c.Publish(t.Context(), "x", 2, false, []byte("two"), 2)
	}()
	var ids []uint16
	for range 2 {
		ids = append(ids, decodeMochi(t, readRaw(t, broker), Version311).PacketID)
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	go c.readLoop()
	pub := func(qos byte, id uint16, retain bool, payload string) mochi.Packet {
		return mochi.Packet{ProtocolVersion: Version311, FixedHeader: mochi.FixedHeader{Type: mochi.Publish, Qos: qos, Retain: retain},
			TopicName: "in/topic", PacketID: id, Payload: []byte(payload)}
	}
	p0 := pub(0, 0, true, "q0")
	send(p0, p0.PublishEncode)
	p1 := pub(1, 11, false, "q1")
	send(p1, p1.PublishEncode)
	expect(mochi.Puback, 11)
	p2 := pub(2, 12, false, "q2")
	send(p2, p2.PublishEncode)
	expect(mochi.Pubrec, 12)
	rel := mochi.Packet{ProtocolVersion: Version311, FixedHeader: mochi.FixedHeader{Type: mochi.Pubrel, Qos: 1}, PacketID: 12}
	send(rel, rel.PubrelEncode)
	expect(mochi.Pubcomp, 12)
	// Acks for the client's publishes: PUBACK, then PUBREC → PUBREL → PUBCOMP.
	pa := mochi.Packet{ProtocolVersion: Version311, FixedHeader: mochi.FixedHeader{Type: mochi.Puback}, PacketID: ids[0]}
	send(pa, pa.PubackEncode)
	rec := mochi.Packet{ProtocolVersion: Version311, FixedHeader: mochi.FixedHeader{Type: mochi.Pubrec}, PacketID: ids[1]}
	send(rec, rec.PubrecEncode)
	expect(mochi.Pubrel, ids[1])
	comp := mochi.Packet{ProtocolVersion: Version311, FixedHeader: mochi.FixedHeader{Type: mochi.Pubcomp}, PacketID: ids[1]}
	send(comp, comp.PubcompEncode)
	// A SUBACK, as the subscribe call waits for it: one QoS granted, one refused.
	codes := make(chan []ReasonCode, 1)
	go func() {
		rc, err := c.Subscribe(t.Context(), []Subscription{{Filter: "a", QoS: 2}, {Filter: "b", QoS: 1}})
		if err != nil {
			t.Error(err)
		}
		codes <- rc
	}()
	if pk := decodeMochi(t, readRaw(t, broker), Version311); pk.FixedHeader.Type != mochi.Subscribe || len(pk.Filters) != 2 {
		t.Fatalf("got packet type %d with %d filters, want a SUBSCRIBE of 2", pk.FixedHeader.Type, len(pk.Filters))
	}
	sa := mochi.Packet{ProtocolVersion: Version311, FixedHeader: mochi.FixedHeader{Type: mochi.Suback}, PacketID: subscribeID, ReasonCodes: []byte{1, 0x80}}
	send(sa, sa.SubackEncode)
	select {
	case rc := <-codes:
		if len(rc) != 2 || rc[0] != 1 || !rc[1].Failed() {
			t.Errorf("SUBACK codes %v, want [1, failure]", rc)
		}
	case <-time.After(wait.Timeout):
		t.Fatalf("no SUBACK within %v", wait.Timeout)
	}
	// A PINGRESP answers the probe.
	go c.Probe()
	b := make([]byte, 2)
	if _, err := io.ReadFull(broker, b); err != nil || b[0] != TypePingreq<<4 {
		t.Fatalf("probe wrote %x (%v), want PINGREQ", b, err)
	}
	pr := mochi.Packet{ProtocolVersion: Version311, FixedHeader: mochi.FixedHeader{Type: mochi.Pingresp}}
	send(pr, pr.PingrespEncode)
	wait.Until(t, "the PINGRESP to answer the probe", c.ProbeAnswered)
	broker.Close()
	waitClosed(t, "the connection to end", c.done)
	<-c.readerDone
	if want := []string{"q0", "q1", "q2"}; len(got) != 3 || string(got[0]) != want[0] || string(got[1]) != want[1] || string(got[2]) != want[2] {
		t.Errorf("payloads %q, want %q", got, want)
	}
	if len(retained) != 3 || !retained[0] || retained[1] || retained[2] {
		t.Errorf("retain flags %v, want [true false false]", retained)
	}
	if len(acks) != 2 || acks[0].Token != 1 || acks[0].AckQoS != 1 || acks[1].Token != 2 || acks[1].AckQoS != 2 || acks[0].Reason.Failed() || acks[1].Reason.Failed() {
		t.Errorf("acks %+v, want tokens 1 (PUBACK) and 2 (PUBCOMP), both successes", acks)
	}
	if c.pending.Load() != 0 {
		t.Errorf("pending = %d", c.pending.Load())
	}
}

// TestHandshake311WithMochi runs the MQTT 3.1 and 3.1.1 handshakes against
// a broker end that decodes the CONNECT with mochi and answers with
// mochi's CONNACK: a session kept, or a refusal named by its return code.
func TestHandshake311WithMochi(t *testing.T) {
	tests := []struct {
		name        string
		version     byte
		code        byte
		present     bool
		wantErr     string
		wantPresent bool
	}{
		{"3.1.1 session present", Version311, 0, true, "", true},
		{"3.1.1 new session", Version311, 0, false, "", false},
		{"3.1.1 not authorized", Version311, 5, false, "CONNACK refused: not authorized", false},
		{"3.1 accepted", Version31, 0, false, "", false},
		{"3.1 unacceptable protocol version", Version31, 1, false, "CONNACK refused: unacceptable protocol version", false},
		{"3.1.1 unknown return code", Version311, 9, false, "CONNACK refused: return code 9", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, broker := pipeConn(t, Handlers{})
			c.version = tt.version
			o := Options{ClientID: "hs", CleanStart: !tt.present, Keepalive: 5 * time.Second}
			errc := make(chan error, 1)
			go func() { errc <- c.handshake(o) }()
			pk := decodeMochi(t, readRaw(t, broker), tt.version)
			if pk.Connect.ClientIdentifier != "hs" || pk.ProtocolVersion != tt.version {
				t.Fatalf("CONNECT of %q at level %d", pk.Connect.ClientIdentifier, pk.ProtocolVersion)
			}
			ca := mochi.Packet{ProtocolVersion: tt.version, FixedHeader: mochi.FixedHeader{Type: mochi.Connack}, SessionPresent: tt.present, ReasonCode: tt.code}
			var b bytes.Buffer
			if err := ca.ConnackEncode(&b); err != nil {
				t.Fatal(err)
			}
			if _, err := broker.Write(b.Bytes()); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-errc:
			case <-time.After(wait.Timeout):
				t.Fatalf("handshake still running after %v", wait.Timeout)
			}
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("handshake error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.SessionPresent() != tt.wantPresent || cap(c.window) != maxInflight {
				t.Errorf("session present %v window %d, want %v %d", c.SessionPresent(), cap(c.window), tt.wantPresent, maxInflight)
			}
		})
	}
}
