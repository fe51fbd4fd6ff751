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
// what it handled, then DISCONNECT, and closes.
func (c *Conn) leave() {
	if len(c.acks) > 0 {
		_ = c.flushAcks()
	}
	c.Disconnect()
}
