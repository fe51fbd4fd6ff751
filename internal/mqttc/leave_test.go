package mqttc

import (
	"bufio"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/loopback"
	"github.com/mqplan/mqplan/internal/wait"
)

// TestLeaveWaitsForTheBroker: Leave returns only once the broker has read
// the acknowledgement of what was handed over and DISCONNECT, even from a
// broker that reads them late and sent more meanwhile (left unread by the
// leaving client). A client that returned at once could otherwise reach a
// broker that takes the session over with those acks still unread.
func TestLeaveWaitsForTheBroker(t *testing.T) {
	for _, tc := range []struct {
		name   string
		unread int // PUBLISHes the broker sends after the first is handed over
	}{
		{name: "nothing unread"},
		{name: "more sent and left unread", unread: 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, broker := loopback.Pair(t, wait.Timeout)
			delivered := make(chan struct{}, 1)
			c := NewConn(a, Version5, func() int64 { return 0 }, Handlers{Deliver: func([]byte, bool) {
				select {
				case delivered <- struct{}{}:
				default:
				}
			}})
			t.Cleanup(c.Close)
			if _, err := broker.Write(appendPublish(nil, Version5, "t", 1, false, false, 7, []byte("first"))); err != nil {
				t.Fatal(err)
			}
			select {
			case <-delivered:
			case <-time.After(wait.Timeout):
				t.Fatalf("the first PUBLISH was not handed over within %v", wait.Timeout)
			}
			for i := range tc.unread {
				if _, err := broker.Write(appendPublish(nil, Version5, "t", 1, false, false, uint16(100+i), make([]byte, 1000))); err != nil {
					t.Fatal(err)
				}
			}
			left := make(chan struct{})
			go func() { c.Leave(wait.Timeout); close(left) }()
			// A broker slow to read: it starts once Leave returned, or
			// after a while if Leave waits for it (as it must).
			select {
			case <-left:
			case <-time.After(300 * time.Millisecond):
			}
			gotAck := false
			br := bufio.NewReader(broker)
			for {
				b0, body, err := readRawPacket(br)
				if err != nil {
					t.Fatalf("the broker read %v before DISCONNECT (PUBACK of the first seen: %v)", err, gotAck)
				}
				if b0>>4 == TypePuback && len(body) >= 2 && binary.BigEndian.Uint16(body) == 7 {
					gotAck = true
				}
				if b0>>4 == TypeDisconnect {
					break
				}
			}
			if !gotAck {
				t.Error("DISCONNECT came without the PUBACK of the message handed over")
			}
			select {
			case <-left:
				t.Fatal("Leave returned before the broker read DISCONNECT")
			default:
			}
			broker.Close() // as a broker does once it read DISCONNECT
			select {
			case <-left:
			case <-time.After(wait.Timeout):
				t.Fatalf("Leave still waiting %v after the broker closed", wait.Timeout)
			}
			if c.Err() != ErrClosed {
				t.Errorf("Err() = %v, want ErrClosed", c.Err())
			}
		})
	}
}

// readRawPacket reads one packet's first byte and body.
func readRawPacket(br *bufio.Reader) (byte, []byte, error) {
	b0, err := br.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, err := ReadVBI(br)
	if err != nil {
		return 0, nil, err
	}
	body := make([]byte, n)
	_, err = io.ReadFull(br, body)
	return b0, body, err
}
