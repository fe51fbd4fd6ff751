package broker

import (
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// sendQuotaHook works around a bug in mochi v2.7.9's outbound flow control.
//
// ParseConnect sets a client's send quota to the Receive Maximum N it sent
// in CONNECT. Once N QoS 1/2 deliveries are unacknowledged, publishToClient
// parks further deliveries in the inflight store marked "send when quota
// frees" (Expiry -1). After each packet from the client, processPacket
// writes one parked delivery and then *deletes* it from the inflight store
// while spending a quota unit; that delivery's PUBACK then finds no inflight
// entry, so processPuback never gives the unit back. N parked deliveries
// later the quota is 0 for good: a subscriber with a backlog larger than N
// receives about 2N messages and then nothing (and the parked ones come
// out in arbitrary order, sorted by a uint16 of their creation second).
//
// ResetSendQuota(0) sets both the quota and its maximum to 0, exactly as for
// an MQTT 3.1.1 client (which sends no Receive Maximum): the parking branch
// requires maximumSendQuota > 0 and the release branch sendQuota > 0, so
// neither runs and every delivery goes straight to the client's outbound
// queue. A non-zero value (say 65535) would not do: the release branch would
// still scan and sort the whole inflight store after every PUBACK. The cost
// is that the broker ignores the subscriber's Receive Maximum
// ([MQTT-3.3.4-9]); mqplan's client tolerates that (it reads and
// acknowledges as fast as packets arrive), and any backlog waits in TCP
// buffers and in mochi's outbound queue (MaximumClientWritesPending).
//
// The quota is reset twice. OnSessionEstablish runs after ParseConnect and
// before the client is registered, so no delivery can be parked before it.
// But a session taken over from an earlier connection gets a cloned
// inflight store with the quota reset to N again (inheritClientSession), so
// OnSessionEstablished, after the takeover, resets it once more. A delivery
// parked in the short window between the resend of the inherited inflight
// messages and OnSessionEstablished would stay parked; mqplan's clients use
// clean sessions, which never take that path.
type sendQuotaHook struct {
	mqtt.HookBase
}

// ID names the hook in mochi's logs.
func (h *sendQuotaHook) ID() string { return "mqplan-send-quota" }

// Provides selects the two session hooks: the workaround costs nothing per
// message.
func (h *sendQuotaHook) Provides(b byte) bool {
	return b == mqtt.OnSessionEstablish || b == mqtt.OnSessionEstablished
}

// OnSessionEstablish disables the send quota of a new session before the
// client can receive anything.
func (h *sendQuotaHook) OnSessionEstablish(cl *mqtt.Client, _ packets.Packet) {
	cl.State.Inflight.ResetSendQuota(0)
}

// OnSessionEstablished disables it again after a session takeover replaced
// the inflight store.
func (h *sendQuotaHook) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	cl.State.Inflight.ResetSendQuota(0)
}
