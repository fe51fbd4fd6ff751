//go:build unix

package mqttc

import (
	"net"
	"os"
	"syscall"
)

// The write that never waits of trywrite.go, where a socket is a file
// descriptor that syscall.Write writes without waiting (every unix: the
// runtime's poller sets its sockets non-blocking).

// initTryWrite prepares the write that never waits on a plain TCP
// connection (nothing on any other).
func (c *Conn) initTryWrite() {
	tc, ok := c.nc.(*net.TCPConn)
	if !ok {
		return
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	c.rc = rc
	// Made once: a closure made per write would allocate.
	c.tryFn = c.tryOnce
}

// tryOnce is the RawConn.Write callback: one write of c.tryBuf, never a
// wait (true after one attempt). wmu is held.
func (c *Conn) tryOnce(fd uintptr) bool {
	for {
		n, err := syscall.Write(int(fd), c.tryBuf)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			c.tryN, c.tryErr = 0, nil
		case err != nil:
			c.tryN, c.tryErr = 0, os.NewSyscallError("write", err)
		default:
			c.tryN, c.tryErr = n, nil
		}
		return true
	}
}
