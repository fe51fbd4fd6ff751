// Package loopback hands tests free addresses on 127.0.0.1, for servers
// that must be told their port before they listen (mochi's WebSocket
// listener, Mosquitto's configuration file), and connected TCP pairs on it,
// for tests of what a real socket does that an in-memory pipe does not.
package loopback

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// FreeAddr returns a 127.0.0.1 address whose port was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// FreePort is FreeAddr's port.
func FreePort(t testing.TB) int {
	t.Helper()
	_, port, _ := net.SplitHostPort(FreeAddr(t))
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Pair is a connected loopback TCP connection: the dialling end and the
// accepted one, both closed when the test ends; dialling and accepting
// each give up after timeout.
func Pair(t testing.TB, timeout time.Duration) (dialled, accepted net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.DialTimeout("tcp", ln.Addr().String(), timeout)
	if err != nil {
		t.Fatal(err)
	}
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(timeout))
	b, err := ln.Accept()
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}
