package mqttc

import "errors"

// This file is the write that never waits, for the runner's pacer, which
// writes the messages of many publishers from one goroutine and must not
// be held by one connection whose broker stopped reading it.
//
// On a plain TCP connection TryPublishProps makes one write system call
// through the socket's syscall.RawConn (trywrite_unix.go), whose callback
// never asks to wait for the socket. A packet the kernel took whole is sent. One it took in
// part, or not at all (EAGAIN: the socket's send buffer is full), is still
// committed to the stream: its unwritten tail is kept in pend, and every
// later writer on the connection (writeLocked, Disconnect) writes pend
// first, blocking as any write does, so that the broker reads the packets
// whole and in order. TryPublishProps then returns ErrStalled, and the
// caller has Flush write the tail (blocking) where waiting is its own.
//
// pend is only used after such a stall: it grows to the largest tail once
// and is reused; the normal path (the whole packet taken) copies nothing.
//
// A connection without a RawConn (TLS, WebSocket: their bytes go through
// their own layers, which keep state across writes), and every connection
// where a socket is not a file descriptor that syscall.Write takes
// (Windows: trywrite_other.go), has no such write:
// TryPublishProps writes there as PublishProps does, blocking, and the
// runner's pacer does not write those connections (TryWrites).

// ErrStalled is TryPublishProps's answer when the socket could not take
// the whole packet: the message is sent as far as the caller is concerned
// (committed to the stream, its in-flight slot kept), and its tail waits
// for the connection's next writer; Flush writes it.
var ErrStalled = errors.New("mqttc: write stalled, tail pending")

// TryWrites reports whether TryPublishProps can write without waiting on
// this connection (a plain TCP one); on others it blocks as any write.
func (c *Conn) TryWrites() bool { return c.rc != nil }

// tryWriteLocked writes packet p (in c.wbuf) with one write that never
// waits, behind any pending tail; stalled when part of it is left in
// pend. wmu is held and werr is nil.
func (c *Conn) tryWriteLocked(p []byte) (stalled bool, err error) {
	if len(c.pend) > 0 {
		// An earlier tail is still unwritten: p goes behind it.
		c.pend = append(c.pend, p...)
		p = c.pend
	}
	c.tryBuf = p
	err = c.rc.Write(c.tryFn)
	c.tryBuf = nil
	if err == nil {
		err = c.tryErr
	}
	if err != nil {
		c.werr = err
		return false, err
	}
	n := c.tryN
	if n > 0 {
		c.lastWrite.Store(c.now())
	}
	switch {
	case n == len(p):
		c.pend = c.pend[:0]
		return false, nil
	case len(c.pend) > 0: // p is pend
		c.pend = c.pend[:copy(c.pend, c.pend[n:])]
	default:
		c.pend = append(c.pend[:0], p[n:]...)
	}
	return true, nil
}

// Flush writes the tail a stalled TryPublishProps left (ErrStalled),
// blocking as any write does (Writing, SetWriteDeadline); nil at once
// when nothing is pending.
func (c *Conn) Flush() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if len(c.pend) == 0 {
		return nil
	}
	return c.writeLocked(nil)
}

// PendingBytes is the number of bytes a stalled write left for the next writer.
func (c *Conn) PendingBytes() int {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return len(c.pend)
}
