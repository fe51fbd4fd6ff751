package broker

import (
	"sync"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// retainLockHook works around a data race in mochi v2.7.9's retained
// messages. RetainMessage sets a topic node's retainPath under the node's
// lock; the scan that finds the retained messages for a new subscription
// (TopicsIndex.scanMessages, after the SUBACK is written) reads retainPath
// with no lock at all. A publisher sending retained messages while a
// wildcard subscription is being served can then tear the string the scan
// reads, and the race detector reports it whenever a plan publishes with
// retain: true onto topics that already hold retained messages.
//
// The hook brackets both sides with one RWMutex: a SUBSCRIBE is processed
// under the read lock (OnSubscribe to OnPacketProcessed, both of which run
// for every SUBSCRIBE that reaches processSubscribe), a retained PUBLISH
// and a retained will under the write lock. Writes were already serialised
// by TopicsIndex's root lock, so retained publishing loses no parallelism;
// ordinary publishes never touch the lock. The hook must be the last one
// added: its OnPublish then runs only when every earlier hook let the
// message through, and the retain it sees is the one the broker applies.
type retainLockHook struct {
	mqtt.HookBase
	mu sync.RWMutex
	// held marks the clients whose goroutine holds the write lock, between
	// OnPublish (or OnWill) and OnPacketProcessed (or OnWillSent): a
	// retained PUBLISH can end before OnPublish (an ACL refusal, a full
	// receive maximum), and then there is nothing to unlock.
	heldMu sync.Mutex
	held   map[*mqtt.Client]bool
}

func newRetainLockHook() *retainLockHook {
	return &retainLockHook{held: map[*mqtt.Client]bool{}}
}

// ID names the hook in mochi's logs.
func (h *retainLockHook) ID() string { return "mqplan-retain-lock" }

// Provides selects the hooks around SUBSCRIBE, PUBLISH and wills.
func (h *retainLockHook) Provides(b byte) bool {
	switch b {
	case mqtt.OnSubscribe, mqtt.OnPublish, mqtt.OnPacketProcessed, mqtt.OnWill, mqtt.OnWillSent:
		return true
	}
	return false
}

// OnSubscribe takes the read lock for the whole SUBSCRIBE, retained scan
// included.
func (h *retainLockHook) OnSubscribe(_ *mqtt.Client, pk packets.Packet) packets.Packet {
	h.mu.RLock()
	return pk
}

// OnPublish takes the write lock for a retained PUBLISH.
func (h *retainLockHook) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if pk.FixedHeader.Retain && !pk.Ignore {
		h.lock(cl)
	}
	return pk, nil
}

// OnPacketProcessed releases what the packet took.
func (h *retainLockHook) OnPacketProcessed(cl *mqtt.Client, pk packets.Packet, _ error) {
	switch pk.FixedHeader.Type {
	case packets.Subscribe:
		h.mu.RUnlock()
	case packets.Publish:
		if pk.FixedHeader.Retain {
			h.unlock(cl)
		}
	}
}

// OnWill takes the write lock for a retained will sent now (a delayed
// will is stored, and sent later by mochi's event loop: not covered).
func (h *retainLockHook) OnWill(cl *mqtt.Client, will mqtt.Will) (mqtt.Will, error) {
	if will.Retain && will.WillDelayInterval == 0 {
		h.lock(cl)
	}
	return will, nil
}

// OnWillSent releases a retained will's write lock.
func (h *retainLockHook) OnWillSent(cl *mqtt.Client, pk packets.Packet) {
	if pk.FixedHeader.Retain {
		h.unlock(cl)
	}
}

func (h *retainLockHook) lock(cl *mqtt.Client) {
	h.mu.Lock()
	h.heldMu.Lock()
	h.held[cl] = true
	h.heldMu.Unlock()
}

func (h *retainLockHook) unlock(cl *mqtt.Client) {
	h.heldMu.Lock()
	held := h.held[cl]
	delete(h.held, cl)
	h.heldMu.Unlock()
	if held {
		h.mu.Unlock()
	}
}
