package mqttc

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"github.com/mqplan/mqplan/internal/wait"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestNewTargets checks how broker URLs become targets: default ports from
// the scheme table, the WebSocket URL and its default path, TLS for the
// secure schemes only, with the URL's host as the server name unless the
// configuration names one, and the errors, which name the URL.
func TestNewTargets(t *testing.T) {
	tests := []struct {
		name     string
		url      string
		addr     string
		ws       string
		tls      bool
		server   string // the TLS ServerName
		cfgName  string // ServerName of the TLS configuration given
		wantErr  string
		tlsCalls int
	}{
		{name: "mqtt default port", url: "mqtt://broker", addr: "broker:1883"},
		{name: "tcp alias", url: "tcp://10.0.0.1:1884", addr: "10.0.0.1:1884"},
		{name: "mqtts default port", url: "mqtts://broker", addr: "broker:8883", tls: true, server: "broker", tlsCalls: 1},
		{name: "ssl alias", url: "ssl://broker:9999", addr: "broker:9999", tls: true, server: "broker", tlsCalls: 1},
		{name: "tls alias, configured server name", url: "tls://10.0.0.2", addr: "10.0.0.2:8883", tls: true, server: "mq.example", cfgName: "mq.example", tlsCalls: 1},
		{name: "ws default port and path", url: "ws://broker", addr: "broker:80", ws: "ws://broker:80/mqtt"},
		{name: "ws own path and query", url: "ws://broker:8083/a%2Fb/mqtt?x=1", addr: "broker:8083", ws: "ws://broker:8083/a%2Fb/mqtt?x=1"},
		{name: "wss", url: "wss://broker", addr: "broker:443", ws: "wss://broker:443/mqtt", tls: true, server: "broker", tlsCalls: 1},
		{name: "IPv6 host", url: "mqtt://[::1]", addr: "[::1]:1883"},
		{name: "unknown scheme", url: "http://broker", wantErr: `broker url "http://broker": unknown scheme "http" (use mqtt, mqtts, ws or wss)`},
		{name: "no host", url: "mqtt://:1883", wantErr: `broker url "mqtt://:1883" has no host`},
		{name: "not a URL", url: "mqtt://a b", wantErr: `broker url "mqtt://a b": parse "mqtt://a b": invalid character " " in host name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			cfg := func() (*tls.Config, error) {
				calls++
				return &tls.Config{ServerName: tt.cfgName}, nil
			}
			got, err := NewTargets([]string{tt.url}, cfg)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tg := got[0]
			if tg.URL != tt.url || tg.addr != tt.addr || tg.ws != tt.ws || (tg.tls != nil) != tt.tls || calls != tt.tlsCalls {
				t.Fatalf("target %+v (TLS config read %d times), want addr %q ws %q tls %v (read %d times)", tg, calls, tt.addr, tt.ws, tt.tls, tt.tlsCalls)
			}
			if tt.tls && tg.tls.ServerName != tt.server {
				t.Errorf("server name %q, want %q", tg.tls.ServerName, tt.server)
			}
		})
	}
}

// TestNewTargetsReadsTLSOnce: the TLS configuration is built once for a
// cluster of secure URLs, each target getting its own copy (its own server
// name), and its error stops the parse.
func TestNewTargetsReadsTLSOnce(t *testing.T) {
	calls := 0
	got, err := NewTargets([]string{"mqtt://n0", "mqtts://n1", "wss://n2"}, func() (*tls.Config, error) {
		calls++
		return &tls.Config{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || got[0].tls != nil || got[1].tls.ServerName != "n1" || got[2].tls.ServerName != "n2" {
		t.Fatalf("TLS config read %d times; targets %+v", calls, got)
	}
	bad := errors.New("broker.tls.ca: cannot read ca.pem: no such file or directory")
	if _, err := NewTargets([]string{"mqtts://n1"}, func() (*tls.Config, error) { return nil, bad }); err != bad {
		t.Fatalf("error %v, want the TLS configuration's", err)
	}
	if _, err := NewTargets([]string{"mqtt://n1"}, func() (*tls.Config, error) { return nil, bad }); err != nil {
		t.Fatalf("plain URLs read the TLS configuration: %v", err)
	}
}

// TestWebSocketStream: over WebSocket, every Write is one binary frame,
// and reads run across frames (an MQTT packet split over two) and skip
// frames that are not binary.
func TestWebSocketStream(t *testing.T) {
	frames := make(chan []byte, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := websocket.Upgrader{Subprotocols: []string{"mqtt"}}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		if ws.Subprotocol() != "mqtt" {
			return
		}
		// A PUBLISH split over two binary frames, a text frame between.
		pkt := appendPublish(nil, Version311, "a/b", 0, false, false, 0, []byte("hello"))
		_ = ws.WriteMessage(websocket.BinaryMessage, pkt[:4])
		_ = ws.WriteMessage(websocket.TextMessage, []byte("not MQTT"))
		_ = ws.WriteMessage(websocket.BinaryMessage, pkt[4:])
		for {
			typ, b, err := ws.ReadMessage()
			if err != nil {
				close(frames)
				return
			}
			if typ == websocket.BinaryMessage {
				frames <- b
			}
		}
	}))
	defer srv.Close()
	targets, err := NewTargets([]string{"ws" + strings.TrimPrefix(srv.URL, "http") + "/mqtt"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait.Timeout)
	defer cancel()
	nc, err := dialTransport(ctx, targets[0], "")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(wait.Timeout))
	c := newConn(nc, Version311, func() int64 { return 0 }, Handlers{})
	b0, body, err := c.readPacket()
	if err != nil {
		t.Fatal(err)
	}
	if b0>>4 != TypePublish || !bytes.HasSuffix(body, []byte("hello")) {
		t.Fatalf("read packet %#02x %q, want the PUBLISH of hello", b0, body)
	}
	for _, p := range [][]byte{pingreqPacket[:], appendAck(nil, TypePuback, 7)} {
		if _, err := nc.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range [][]byte{pingreqPacket[:], appendAck(nil, TypePuback, 7)} {
		select {
		case got := <-frames:
			if !bytes.Equal(got, want) {
				t.Errorf("frame %x, want %x", got, want)
			}
		case <-time.After(wait.Timeout):
			t.Fatalf("no frame within %v", wait.Timeout)
		}
	}
}
