//go:build unix

package mqttc

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// The raw read loop of rawread.go, where a socket is a file descriptor
// that syscall.Read reads without waiting (every unix: the runtime's
// poller sets its sockets non-blocking).

// readFD reads the socket s.fd once, EAGAIN becoming errWouldBlock.
func (s *sockReader) readFD(p []byte) (int, error) {
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
// rawread.go): it handles every packet from the broker until the connection
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
