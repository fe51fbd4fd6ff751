package mqttc

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
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
// their own layers); so does a connection whose socket is not reachable.

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
	for {
		n, err := syscall.Read(s.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, errWouldBlock
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		s.drained = n < len(p)
		return n, nil
	}
}

// startReader starts the connection's reader goroutine: the raw read loop
// on a plain TCP connection, readLoop on any other.
func (c *Conn) startReader() {
	if tc, ok := c.nc.(*net.TCPConn); ok {
		if rc, err := tc.SyscallConn(); err == nil {
			go c.rawReadLoop(rc)
			return
		}
	}
	go c.readLoop()
}

// rawReadLoop is readLoop inside one RawConn.Read callback (see the top of
// this file): it handles every packet from the broker until the connection
// ends, flushing queued acknowledgements before it waits, as readLoop does.
func (c *Conn) rawReadLoop(rc syscall.RawConn) {
	defer close(c.readerDone)
	var readErr, handleErr error
	err := rc.Read(func(fd uintptr) bool {
		c.src.fd = int(fd)
		for {
			if c.br.Buffered() == 0 {
				if len(c.acks) > 0 {
					if handleErr = c.flushAcks(); handleErr != nil {
						return true
					}
				}
				if c.leaving.Load() {
					// Leave: stop at the first read that would need the
					// network; what was read is handled.
					readErr = errLeft
					return true
				}
			}
			if c.shut.Load() {
				readErr = net.ErrClosed
				return true
			}
			b0, body, err := c.readPacket()
			if err == errWouldBlock {
				return false // wait until the socket is readable
			}
			if err != nil {
				readErr = err
				return true
			}
			c.lastRead.Store(c.now())
			if handleErr = c.handle(b0, body); handleErr != nil {
				return true
			}
		}
	})
	c.src.fd = -1
	if handleErr != nil {
		c.close(handleErr)
		return
	}
	if readErr == nil {
		readErr = err // the wait failed: closed, or Leave's deadline
	}
	if c.leaving.Load() {
		c.leave() // see Leave: what was buffered is handled
		return
	}
	c.close(readErr)
}

// errLeft ends the raw read loop when Leave asked it to stop.
var errLeft = errors.New("mqttc: left")
