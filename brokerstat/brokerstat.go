// Package brokerstat owns a broker's own counters: what a broker says of
// itself in its $SYS topics or on its Prometheus endpoint, parsed and
// normalised onto one small set (Counter) that reads the same whichever
// broker reported it. It is pure: it neither connects, subscribes nor
// scrapes (the runner does), keeps no history (package stats does) and
// judges nothing (package report does). Everything it reads is bounded:
// a $SYS payload longer than MaxSysPayload, a topic longer than
// MaxSysTopic and an exposition longer than the caller's limit are
// refused, never buffered.
//
// The normalised set, and where each figure comes from:
//
//	Counter          Mosquitto 2.x $SYS                      mochi v2 $SYS (the embedded broker)   EMQX 4/5 $SYS                                    EMQX Prometheus
//	clients          broker/clients/connected                broker/clients/connected              brokers/<node>/stats/connections/count           emqx_connections_count
//	publish_received broker/publish/messages/received        broker/messages/received              brokers/<node>/metrics/messages/received         emqx_messages_received
//	publish_sent     broker/publish/messages/sent            broker/messages/sent                  brokers/<node>/metrics/messages/sent             emqx_messages_sent
//	dropped          broker/publish/messages/dropped         broker/messages/dropped               brokers/<node>/metrics/messages/dropped          emqx_messages_dropped
//	memory_bytes     broker/heap/current                     broker/system/memory                  -                                                erlang_vm_memory_bytes_total (summed), else process_resident_memory_bytes
//	subscriptions    broker/subscriptions/count              broker/subscriptions                  brokers/<node>/stats/subscriptions/count         emqx_subscriptions_count
//
// Mosquitto's broker/messages/received and /sent count every MQTT packet,
// not PUBLISH only, while mochi's topics of the same names count
// PUBLISH: those two are read as PUBLISH counts only from a broker that
// shows itself as mochi (it publishes broker/packets/received, which
// Mosquitto does not). EMQX figures are summed over its nodes. Every
// other topic or metric is ignored.
package brokerstat

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Counter is one figure of the normalised set.
type Counter int

// The normalised counters. Clients, MemoryBytes and Subscriptions are
// gauges (a value at a moment); PublishReceived, PublishSent and Dropped
// only grow while the broker runs, so a run's share is end minus start.
const (
	// Clients is the clients connected to the broker.
	Clients Counter = iota
	// PublishReceived is the PUBLISH packets the broker received.
	PublishReceived
	// PublishSent is the PUBLISH packets the broker sent.
	PublishSent
	// Dropped is the messages the broker dropped (queues full, no room).
	Dropped
	// MemoryBytes is the broker's memory in use, bytes.
	MemoryBytes
	// Subscriptions is the subscriptions the broker holds.
	Subscriptions
	// NumCounters is how many counters there are.
	NumCounters
)

var counterNames = [NumCounters]string{"clients", "publish_received", "publish_sent", "dropped", "memory_bytes", "subscriptions"}

// String is the counter's name in JSON and in the report.
func (c Counter) String() string {
	if c < 0 || c >= NumCounters {
		return fmt.Sprintf("Counter(%d)", int(c))
	}
	return counterNames[c]
}

// Cumulative reports whether the counter only grows (its run's share is a
// delta), as opposed to a gauge.
func (c Counter) Cumulative() bool {
	return c == PublishReceived || c == PublishSent || c == Dropped
}

// CounterByName is the counter a name (String) stands for.
func CounterByName(name string) (Counter, bool) {
	for i, n := range counterNames {
		if n == name {
			return Counter(i), true
		}
	}
	return 0, false
}

// Counters is one reading of a broker's counters: those the broker
// reported, each with its value. The zero value has none.
type Counters struct {
	set   uint8
	value [NumCounters]int64
}

// Get returns counter c and whether the broker reported it.
func (cs Counters) Get(c Counter) (int64, bool) {
	if c < 0 || c >= NumCounters || cs.set&(1<<c) == 0 {
		return 0, false
	}
	return cs.value[c], true
}

// Put sets counter c to v (a negative v is refused: no counter is).
func (cs *Counters) Put(c Counter, v int64) {
	if c < 0 || c >= NumCounters || v < 0 {
		return
	}
	cs.set |= 1 << c
	cs.value[c] = v
}

// Drop removes counter c from the reading: a figure known to be unsound
// (a $SYS end reading no live update followed) must read as absent.
func (cs *Counters) Drop(c Counter) {
	if c < 0 || c >= NumCounters {
		return
	}
	cs.set &^= 1 << c
	cs.value[c] = 0
}

// Sampled reports whether the reading holds any counter.
func (cs Counters) Sampled() bool { return cs.set != 0 }

// Fill puts into cs the counters of o that cs lacks.
func (cs *Counters) Fill(o Counters) {
	for c := range NumCounters {
		if _, ok := cs.Get(c); ok {
			continue
		}
		if v, ok := o.Get(c); ok {
			cs.Put(c, v)
		}
	}
}

// MaxSysTopic and MaxSysPayload bound what a $SYS message may be to be
// read: the counters' topics are short and their payloads a number.
const (
	MaxSysTopic   = 256
	MaxSysPayload = 64
)

// sysSource is where a $SYS value came from, before the dialects are
// resolved.
type sysSource int

const (
	srcClients         sysSource = iota // broker/clients/connected (Mosquitto, mochi)
	srcMosqPubReceived                  // broker/publish/messages/received
	srcMosqPubSent                      // broker/publish/messages/sent
	srcMosqPubDropped                   // broker/publish/messages/dropped
	srcMosqHeap                         // broker/heap/current
	srcMosqSubs                         // broker/subscriptions/count
	srcMsgReceived                      // broker/messages/received (mochi: PUBLISH; Mosquitto: every packet)
	srcMsgSent                          // broker/messages/sent
	srcMsgDropped                       // broker/messages/dropped (mochi)
	srcMochiPackets                     // broker/packets/received: only mochi has it
	srcMochiMemory                      // broker/system/memory
	srcMochiSubs                        // broker/subscriptions
	srcEMQXConns                        // brokers/<node>/stats/connections/count
	srcEMQXReceived                     // brokers/<node>/metrics/messages/received
	srcEMQXSent                         // brokers/<node>/metrics/messages/sent
	srcEMQXDropped                      // brokers/<node>/metrics/messages/dropped
	srcEMQXSubs                         // brokers/<node>/stats/subscriptions/count
	numSources
)

var brokerTopics = map[string]sysSource{
	"clients/connected":         srcClients,
	"publish/messages/received": srcMosqPubReceived,
	"publish/messages/sent":     srcMosqPubSent,
	"publish/messages/dropped":  srcMosqPubDropped,
	"heap/current":              srcMosqHeap,
	"subscriptions/count":       srcMosqSubs,
	"messages/received":         srcMsgReceived,
	"messages/sent":             srcMsgSent,
	"messages/dropped":          srcMsgDropped,
	"packets/received":          srcMochiPackets,
	"system/memory":             srcMochiMemory,
	"subscriptions":             srcMochiSubs,
}

var emqxTopics = map[string]sysSource{
	"stats/connections/count":   srcEMQXConns,
	"metrics/messages/received": srcEMQXReceived,
	"metrics/messages/sent":     srcEMQXSent,
	"metrics/messages/dropped":  srcEMQXDropped,
	"stats/subscriptions/count": srcEMQXSubs,
}

// maxNodes bounds how many EMQX nodes a Sys keeps figures for.
const maxNodes = 64

// Sys follows a broker's $SYS topics: give it each message (Message), read
// the normalised counters (Counters). Not safe for concurrent use.
type Sys struct {
	// mosquitto: $SYS/broker/version said "mosquitto version …".
	mosquitto bool
	// uptime is the broker's $SYS/broker/uptime in seconds (Mosquitto's
	// "12 seconds"); uptimeSeen once one arrived.
	uptime     int64
	uptimeSeen bool
	seen       [numSources]bool
	value      [numSources]int64
	// nodes holds each EMQX node's figures (summed by Counters).
	nodes map[string]*[numSources]int64
}

// Message reads one $SYS message and returns the normalised counter it
// set, when it set one whose meaning is known by now (an unknown topic, a
// payload that is not a whole number, one past the bounds is ignored;
// mochi's broker/messages/* are known once the broker showed it is mochi).
func (s *Sys) Message(topic string, payload []byte) (Counter, bool) {
	if len(topic) > MaxSysTopic || len(payload) > MaxSysPayload {
		return 0, false
	}
	switch topic {
	case "$SYS/broker/version":
		s.mosquitto = strings.HasPrefix(strings.TrimSpace(string(payload)), "mosquitto version ")
		return 0, false
	case "$SYS/broker/uptime":
		if n, ok := strings.CutSuffix(strings.TrimSpace(string(payload)), " seconds"); ok {
			if v, ok := ParseSysPayload([]byte(n)); ok {
				s.uptime, s.uptimeSeen = v, true
			}
		}
		return 0, false
	}
	src, node, ok := sysTopic(topic)
	if !ok {
		return 0, false
	}
	v, ok := ParseSysPayload(payload)
	if !ok {
		return 0, false
	}
	if node != "" {
		if s.nodes == nil {
			s.nodes = map[string]*[numSources]int64{}
		}
		nv := s.nodes[node]
		if nv == nil {
			if len(s.nodes) >= maxNodes {
				return 0, false
			}
			nv = new([numSources]int64)
			s.nodes[node] = nv
		}
		nv[src] = v
	}
	s.seen[src] = true
	s.value[src] = v
	return s.counterOf(src)
}

// sourceCounters are the counters the sources stand for, whatever the
// dialect; mochiCounters those that stand for one only on mochi.
var (
	sourceCounters = map[sysSource]Counter{
		srcClients: Clients, srcMosqPubReceived: PublishReceived, srcMosqPubSent: PublishSent,
		srcMosqPubDropped: Dropped, srcMosqHeap: MemoryBytes, srcMosqSubs: Subscriptions,
		srcEMQXConns: Clients, srcEMQXReceived: PublishReceived, srcEMQXSent: PublishSent,
		srcEMQXDropped: Dropped, srcEMQXSubs: Subscriptions,
	}
	mochiCounters = map[sysSource]Counter{
		srcMsgReceived: PublishReceived, srcMsgSent: PublishSent, srcMsgDropped: Dropped,
		srcMochiMemory: MemoryBytes, srcMochiSubs: Subscriptions,
	}
)

// counterOf is the counter src stands for, as far as known now.
func (s *Sys) counterOf(src sysSource) (Counter, bool) {
	if c, ok := sourceCounters[src]; ok {
		return c, true
	}
	if s.mochi() {
		c, ok := mochiCounters[src]
		return c, ok
	}
	return 0, false
}

// mochi reports whether the broker showed itself as mochi.
func (s *Sys) mochi() bool { return s.seen[srcMochiPackets] || s.seen[srcMochiMemory] }

// Mosquitto reports whether the broker showed itself as Mosquitto (its
// $SYS/broker/version, retained without expiry, says "mosquitto version").
// Mosquitto publishes a counter's topic only when the counter changed
// since its last update, with a 60-second message expiry (2.0), so on an
// idle Mosquitto a counter may be absent although the broker has it: a
// reader may take a counter that never came while it listened as
// unchanged only from a broker known to publish on change.
func (s *Sys) Mosquitto() bool { return s.mosquitto }

// Uptime is the broker's uptime in seconds as its latest
// $SYS/broker/uptime said (Mosquitto republishes it every update, so two
// readings a known number of updates apart give its update interval), and
// whether one came.
func (s *Sys) Uptime() (int64, bool) { return s.uptime, s.uptimeSeen }

// TakenPerTopic reports whether the broker takes each $SYS figure as it
// publishes that figure's topic (Mosquitto: its publish/messages/sent
// counts the $SYS messages of the same update published before it), not
// all at once when an update begins (mochi, which takes a copy of its
// figures first; EMQX is taken to do the same). A reader that matches the
// broker's PUBLISH-sent counter against what it received itself needs to
// know which.
func (s *Sys) TakenPerTopic() bool { return s.seen[srcMosqPubSent] || s.seen[srcMosqPubReceived] }

// sysTopic maps a topic to its source, with the EMQX node it names.
func sysTopic(topic string) (sysSource, string, bool) {
	if rest, ok := strings.CutPrefix(topic, "$SYS/broker/"); ok {
		src, ok := brokerTopics[rest]
		return src, "", ok
	}
	if rest, ok := strings.CutPrefix(topic, "$SYS/brokers/"); ok {
		node, path, ok := strings.Cut(rest, "/")
		if !ok || node == "" {
			return 0, "", false
		}
		src, ok := emqxTopics[path]
		return src, node, ok
	}
	return 0, "", false
}

// ParseSysPayload reads a $SYS counter's payload: a whole number, maybe
// surrounded by spaces, that is not negative. Anything else (Mosquitto's
// "12 seconds", a JSON object, a float) is not a counter.
func ParseSysPayload(p []byte) (int64, bool) {
	if len(p) > MaxSysPayload {
		return 0, false
	}
	s := strings.TrimSpace(string(p))
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// Counters is the normalised reading of every $SYS counter seen so far.
func (s *Sys) Counters() Counters {
	var cs Counters
	put := func(c Counter, src sysSource) {
		if s.seen[src] {
			cs.Put(c, s.value[src])
		}
	}
	emqx := func(c Counter, src sysSource) {
		if !s.seen[src] {
			return
		}
		var sum int64
		for _, nv := range s.nodes {
			sum = satAdd(sum, nv[src])
		}
		cs.Put(c, sum)
	}
	mochi := s.mochi()
	put(Clients, srcClients)
	put(PublishReceived, srcMosqPubReceived)
	put(PublishSent, srcMosqPubSent)
	put(Dropped, srcMosqPubDropped)
	put(MemoryBytes, srcMosqHeap)
	put(Subscriptions, srcMosqSubs)
	if mochi {
		put(PublishReceived, srcMsgReceived)
		put(PublishSent, srcMsgSent)
		put(Dropped, srcMsgDropped)
		put(MemoryBytes, srcMochiMemory)
		put(Subscriptions, srcMochiSubs)
	}
	emqx(Clients, srcEMQXConns)
	emqx(PublishReceived, srcEMQXReceived)
	emqx(PublishSent, srcEMQXSent)
	emqx(Dropped, srcEMQXDropped)
	emqx(Subscriptions, srcEMQXSubs)
	return cs
}

// satAdd adds without overflowing.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
