package live

import (
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestListenAddr: a bare port is loopback, a named host stays, and what
// is not HOST:PORT is refused with the reason.
func TestListenAddr(t *testing.T) {
	tests := []struct {
		name, in, want, errHas string
	}{
		{name: "bare port is loopback", in: ":9464", want: "127.0.0.1:9464"},
		{name: "named loopback", in: "127.0.0.1:9464", want: "127.0.0.1:9464"},
		{name: "IPv6 loopback", in: "[::1]:9464", want: "[::1]:9464"},
		{name: "wildcard kept as asked", in: "0.0.0.0:9464", want: "0.0.0.0:9464"},
		{name: "no port", in: "127.0.0.1", errHas: "is not HOST:PORT"},
		{name: "empty port", in: "127.0.0.1:", errHas: "has no port"},
		{name: "too long", in: strings.Repeat("a", 400) + ":1", errHas: "at most 300"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ListenAddr(tt.in)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("ListenAddr(%q) = %q, %v; want an error containing %q", tt.in, got, err, tt.errHas)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ListenAddr(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestServer: the endpoint serves /metrics only, says whether it is
// loopback, refuses a port in use at Listen, and is gone after Close.
func TestServer(t *testing.T) {
	x := New([]string{"g"}, Info{RunID: "test"})
	s, err := Listen(":0", x.Handler())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") || !s.Loopback() {
		t.Errorf("bare :0 listens on %s (loopback %v), want 127.0.0.1", s.Addr(), s.Loopback())
	}
	if fams := scrape(t, s.URL()); fams["mqplan_messages_sent_total"] == nil {
		t.Errorf("no mqplan_messages_sent_total at %s", s.URL())
	}
	resp, err := http.Get("http://" + s.Addr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET / = %s, want 404", resp.Status)
	}
	if _, err := Listen(s.Addr(), x.Handler()); err == nil || !strings.Contains(err.Error(), "listen on "+s.Addr()) {
		t.Errorf("a second Listen on %s = %v, want the port-in-use error", s.Addr(), err)
	}
	addr := s.Addr()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Close", addr)
	}

	wide, err := Listen("0.0.0.0:0", x.Handler())
	if err != nil {
		t.Fatal(err)
	}
	defer wide.Close()
	if wide.Loopback() {
		t.Errorf("0.0.0.0 reported as loopback")
	}
}
