package mqttc

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestDialFromSourceDefersPort: a dial from a source address asks the
// kernel to choose its local port at connect (IP_BIND_ADDRESS_NO_PORT),
// so that the ports held by closed connections in TIME_WAIT to other
// destinations do not stall it; a dial without one is left as it was.
func TestDialFromSourceDefersPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	targets, err := NewTargets([]string{"mqtt://" + ln.Addr().String()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, source string
		want         int
	}{
		{"from a source address", "127.0.0.2", 1},
		{"from any address", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			nc, err := dialTransport(ctx, targets[0], tc.source)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			local := nc.LocalAddr().(*net.TCPAddr)
			if tc.source != "" && local.IP.String() != tc.source {
				t.Errorf("local address %v, want %s", local, tc.source)
			}
			rc, err := nc.(*net.TCPConn).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			got, serr := -1, error(nil)
			if err := rc.Control(func(fd uintptr) {
				got, serr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort)
			}); err != nil || serr != nil {
				t.Fatal(err, serr)
			}
			if got != tc.want {
				t.Errorf("IP_BIND_ADDRESS_NO_PORT = %d, want %d", got, tc.want)
			}
		})
	}
}
