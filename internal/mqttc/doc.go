// Package mqttc is mqplan's lean MQTT client: one connection to a broker
// at MQTT 3.1, 3.1.1 or 5, over TCP, TLS, WebSocket or WebSocket over TLS,
// that publishes, subscribes, acknowledges what it receives, keeps itself
// alive, and resumes its in-flight publishes on the next connection when
// the broker kept the session.
//
// It owns the wire (codec.go: packet types, named flag bits, variable byte
// integers, the encoders of what it writes itself; reason.go: the names
// of reason codes), the connection (conn.go), the in-flight window and
// session resume (inflight.go) and the transports (transport.go). It must
// not know about plans, statistics or the run: it takes options and
// callbacks, and says what happened through them and its errors. A publish
// carries the caller's opaque Token, which comes back in its Ack; what a
// token stands for is the caller's business.
//
// # Why not paho.golang's client
//
// The rare packets of MQTT 5 (CONNECT, CONNACK, SUBSCRIBE, SUBACK) are
// encoded and decoded with eclipse/paho.golang's packets package; the
// packets of the hot path (PUBLISH and its acknowledgements, pings) and
// every packet of 3.1/3.1.1 are handled here, in place, because
// paho.golang's client could not meet mqplan's budgets. Measured against
// Mosquitto, paho's Client cost ~25 KiB of RSS per idle connection (3
// goroutines, channels sized by ReceiveMaximum) against a budget of
// 16 KiB, and per message it allocates several objects, starts a goroutine
// for every QoS 1/2 publish and hands every received message from its
// reader goroutine to a router goroutine, which made the generator use
// more CPU than the broker it was testing. A Conn has one goroutine (its
// reader), allocates nothing per message, and acknowledges deliveries from
// the reader directly.
//
// # What allocates
//
// Nothing per message: Publish (slot, packet id, encoding into the
// connection's reused write buffer, the write), the reader's handling of
// a PUBLISH (decoded in place in the read buffer when it fits, else in a
// reused buffer grown once) and of acknowledgements (queued in a reused
// buffer, written together), Handlers.Deliver and Handlers.Acked calls,
// Ping and Probe, and MQTT 5 request/response: PublishRequest (response
// topic and correlation data written into the same buffer), the reader's
// reading of those properties (in place, handed to Handlers.Request) and
// Respond (the answer, from the reader itself, at QoS 0). runner/hotpath_test.go holds the tests and benchmarks
// that keep it so, over a pipe and loopback TCP. What allocates is per
// connection or rare: Dial, the first QoS 1/2 publish (the window's slots),
// Subscribe, Adopt and Resend, TakeUnacked's result, errors.
//
// # Which goroutine owns what
//
//   - The reader goroutine, started by Dial (or NewConn), is the only one
//     that reads the socket (on plain TCP on unix from inside one
//     syscall.RawConn.Read callback, rawread.go, so that a delivery costs
//     one read, not two; on Windows through net.Conn). It owns the read buffers and the queue of
//     acknowledgements it writes, and runs Handlers.Deliver and
//     Handlers.Acked, one call at a time, so a caller's receive-side state
//     touched only from those handlers needs no lock. It returns when the
//     connection ends, and then closes ReaderDone: a caller that dials the
//     same client again waits for it first, so that two readers never run
//     the same client's handlers at once.
//   - Writers are any goroutines: Publish (the caller's publisher), the
//     reader's acknowledgements, Ping, Probe, Subscribe, Resend and
//     Disconnect all write whole packets under one mutex, one write call a
//     packet (WebSocket frames each packet on its own). A write stuck on a
//     broker that reads nothing holds that mutex; Writing tells it, and
//     SetWriteDeadline (safe beside the write) releases it.
//   - The pinger is the caller's: one goroutine calls Ping on every
//     connection now and then, instead of a timer per connection. Ping
//     closes a connection that heard nothing for one and a half
//     keepalives.
//   - The in-flight window (slots by packet id, free ids) is shared by the
//     publisher and the reader under its own mutex; a full window makes
//     Publish wait, which the caller sees as schedule lag, and makes
//     TryPublishProps return ErrWindowFull for a caller that must not wait.
//   - TryPublishProps's write does not wait on a plain TCP connection on
//     unix either (trywrite.go; on Windows it blocks, as on TLS): a packet the socket took only in part leaves
//     its tail pending, written first by the next writer, and the answer
//     is ErrStalled (sent); Flush writes the tail.
package mqttc
