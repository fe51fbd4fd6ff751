package mqttc

import "time"

// Leave ends the connection the way a device going offline on purpose
// does, exactly once for every delivery: every PUBLISH the caller was given
// (Handlers.Deliver) is acknowledged before DISCONNECT, and none is given
// after the reader stopped, so a kept session gets again, on the next
// connection, only what this one never handed over; no delivery is both
// handed over and sent again, which a plain Disconnect cannot promise
// (its DISCONNECT can overtake acknowledgements still queued). Closed gets
// a nil error, as for Disconnect.
//
// The reader is woken by a read deadline: it handles the packets it had
// already read from the socket, and stops at the first read that would
// wait for the network (the deadline fails it); what the broker sent after
// that stays unacknowledged, for the kept session to send again. If it
// has not stopped within timeout (a handler that blocks), Leave falls back
// to Disconnect.
func (c *Conn) Leave(timeout time.Duration) {
	c.leaveBy = time.Now().Add(timeout) // published by the store below
	c.leaving.Store(true)
	_ = c.nc.SetReadDeadline(time.Now())
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.readerDone:
	case <-t.C:
		c.Disconnect()
	}
}

// leave is the reader's side of Leave: it writes the acknowledgements of
// what it handled, then DISCONNECT, and closes gracefully.
//
// Closing a TCP socket with unread bytes in its receive buffer (what the
// broker sent after the reader stopped) makes the kernel send RST and
// discard whatever of ours is still in the send buffer: under load the
// acknowledgements and DISCONNECT just written may be among them, and a
// broker that never reads the acks sends those messages again to a kept
// session. And a broker that has not yet read them when the client's next
// CONNECT arrives (its reader for the old connection not scheduled yet)
// takes the old session over with the acknowledgements unread: a kept
// session sends those messages again, and a clean one never counts them
// acknowledged. So the write side is shut (FIN after our bytes), and what
// the broker still sends is read and dropped until it closes its side,
// which it does once it has read DISCONNECT and so every ack before it;
// those deliveries were never handed over, as Leave promises. The wait
// ends at Leave's timeout, when Leave closes the connection.
func (c *Conn) leave() {
	if len(c.acks) > 0 {
		_ = c.flushAcks()
	}
	if c.writeDisconnect() {
		c.drainAfterDisconnect()
	}
	c.close(nil)
}

// drainAfterDisconnect half-closes the connection and reads until the
// broker closes its side, at most until Leave's timeout. A transport
// without a half
// close (WebSocket) is closed as it is.
func (c *Conn) drainAfterDisconnect() {
	hc, ok := c.nc.(interface{ CloseWrite() error })
	if !ok || hc.CloseWrite() != nil {
		return
	}
	if c.nc.SetReadDeadline(c.leaveBy) != nil {
		return
	}
	var buf [4096]byte
	for {
		if _, err := c.nc.Read(buf[:]); err != nil {
			return
		}
	}
}
