package mqttc

import (
	"errors"
	"net"
)

// This file is the reader of a plain TCP connection: the whole read loop
// runs inside one syscall.RawConn.Read callback, which reads the socket
// itself and, after a read that drained it (fewer bytes than asked for),
// waits for the socket to be readable again instead of reading once more.
//
// Why: a subscriber receiving one message at a time made two reads a
// delivery through net.Conn.Read: the one with the message, and one that
// returned EAGAIN before the goroutine parked (bench/README.md, "Where the
// CPU goes": 2.0 reads a delivery in fan-out). The second one cannot be
// skipped from outside: every net.Conn.Read (and every RawConn.Read) first
// clears the readiness the poller recorded (internal/poll's prepareRead),
// so a read skipped after a short one could miss the data that arrived in
// between and wait for the next. Inside one RawConn.Read nothing clears
// it: the callback returns false, the poller parks the goroutine until
// the socket is readable (at once when data came in meanwhile), and calls
// the callback again.
//
// TLS and WebSocket connections keep readLoop (their reads go through
// their own layers); so does a connection whose socket is not reachable,
// and every connection where a socket is not a file descriptor that
// syscall.Read takes (Windows: rawread_other.go). The loop itself and its
// system calls are in rawread_unix.go.

// errWouldBlock is sockReader's answer when the socket has nothing to
// read now: the raw read loop then waits for it to be readable.
var errWouldBlock = errors.New("mqttc: read would block")

// sockReader is what the reader's buffer reads from: the connection, or,
// inside the raw read loop, the socket's file descriptor directly.
type sockReader struct {
	nc net.Conn
	// fd is the socket inside the raw read loop, -1 outside it.
	fd int
	// drained: the last read returned fewer bytes than asked for, so
	// the next one would find nothing (until the poller says otherwise).
	drained bool
}

func (s *sockReader) Read(p []byte) (int, error) {
	if s.fd < 0 {
		return s.nc.Read(p)
	}
	if s.drained {
		s.drained = false
		return 0, errWouldBlock
	}
	return s.readFD(p)
}
