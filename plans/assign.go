package plans

// Sharding: which of n processes (shards) runs each client of a plan, so
// that a load too big for one process or machine runs as n parts that
// merge into one exact result (issue 11, design in shared/scaleout.md §3.2).
//
// Every shard compiles the whole plan and keeps the global client numbers
// (a client's index in Program.Clients is its publisher number in message
// headers): the assignment only says which shard owns each client, so
// that client ids, topics and %i are the same whatever n is. It is a pure
// function of the compiled program and n, deterministic on every machine
// (integer arithmetic, no map order), versioned and hashed, so that a
// coordinator refuses a shard that computed another.
//
// The auto strategy keeps together what measures best together:
//   - units: a union-find over clients joins every publisher with every
//     client one of its messages reaches (the trie walk of
//     expectationTables, once per distinct topic and filter, never per
//     pair), so that a 1-to-1 pair measures its latency on one clock;
//     a request reaches its responder the same way. Every $share group is
//     joined whole: that link is hard, since duplicates among its members
//     are only told apart in one process.
//   - weights: a unit weighs its connections and its messages (planned
//     sends and deliveries, answers included) as shares of the plan's,
//     added, so that file descriptors and CPU balance together.
//   - packing: largest unit first onto the least-loaded shard (ties to the
//     lowest index), so that equal small units (1-to-1 pairs, idle
//     clients) go round-robin and every group's connect ramp is striped
//     across the shards. A unit heavier than one shard's even share and
//     10 %, with at least n clients, is split: its share groups placed
//     whole (however heavy: a shard may then carry more than its share,
//     which explain shows), its other clients striped round-robin in
//     client order, so each of its groups spreads within one client of
//     even.
//
// The stripe strategy is plain striping: client i on shard i mod n (a
// share group on its first member's shard).

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"
	"slices"
)

// MaxShards bounds n: far more processes than a test needs (the XMeter
// seed ran on ten machines), and the per-shard tables stay small.
const MaxShards = 1024

// The sharding strategies of `sharding.strategy`.
const (
	// ShardingAuto keeps publishers with the clients they reach, share
	// groups whole, and balances connections and messages (the default).
	ShardingAuto = "auto"
	// ShardingStripe puts client i on shard i mod n, whatever the topology:
	// perfectly even shards, most deliveries across them.
	ShardingStripe = "stripe"
)

// Sharding is the plan's `sharding:` section; nil means the defaults.
type Sharding struct {
	// Strategy is ShardingAuto or ShardingStripe.
	Strategy string `json:"strategy"`
	Pos      Pos    `json:"-"`
}

// Assignment says which shard owns each client of a program, and what each
// shard sends and receives as planned.
type Assignment struct {
	// Strategy is the strategy that made it: ShardingAuto or ShardingStripe.
	Strategy string
	// Version names the algorithm ("auto-v1", "stripe-v1"): a shard that
	// computes with another version gets another Hash.
	Version string
	// Shards is n.
	Shards int
	// Shard is the owning shard by global client index (Program.Clients).
	Shard []int32
	// Hash is the hex SHA-256 of Version, Shards and Shard, what shards
	// compare before they run.
	Hash string
	// ExpectedByShard splits each publisher's Expected by the shard that
	// owns the receiver (len Shards; nil for a client that does not
	// publish): a shard waits for exactly the deliveries addressed to it.
	// Publishers with the same pattern share one table: never write it.
	ExpectedByShard [][]int
	// Sends and Deliveries are each shard's planned messages sent and
	// deliveries received over warmup, ramp and steady (open-loop
	// publishers; a closed loop's are not known before the run).
	Sends, Deliveries []int64
	// CrossDeliveries are the planned deliveries whose publisher and
	// receiver are on different shards: their latency spans two clocks.
	CrossDeliveries int64
	// Units is the number of co-location units the clients formed (auto;
	// the number of clients with stripe).
	Units int
	// Split is the number of units heavier than one shard's share, whose
	// clients were striped (auto).
	Split int
}

// Mask returns which clients shard s owns, by global client index.
func (a *Assignment) Mask(s int) []bool {
	owned := make([]bool, len(a.Shard))
	for i, sh := range a.Shard {
		owned[i] = int(sh) == s
	}
	return owned
}

// Counts returns how many clients each shard owns.
func (a *Assignment) Counts() []int {
	n := make([]int, a.Shards)
	for _, s := range a.Shard {
		n[s]++
	}
	return n
}

// Assign computes the shard of every client of prog for n shards, with the
// plan's sharding strategy (auto unless it says stripe). The work is
// O(clients + subscriptions + distinct topics × the filters each reaches +
// n log n per placed unit), the trie walk Compile already did.
func Assign(prog *Program, n int) (*Assignment, error) {
	if n < 1 || n > MaxShards {
		return nil, fmt.Errorf("shards: %d is out of range: give 1 to %d", n, MaxShards)
	}
	strategy := ShardingAuto
	if sh := prog.Plan.Sharding; sh != nil && sh.Strategy != "" {
		strategy = sh.Strategy
	}
	a := &Assignment{Strategy: strategy, Shards: n, Shard: make([]int32, len(prog.Clients))}
	end := prog.Warmup + prog.Ramp + prog.Steady
	sends := make([]int64, len(prog.Clients))
	for i := range prog.Clients {
		sends[i] = int64(prog.Sends(&prog.Clients[i], 0, end))
	}
	hard := shareUnion(prog)
	switch strategy {
	case ShardingAuto:
		a.Version = "auto-v1"
		packAuto(prog, a, sends, hard)
	case ShardingStripe:
		a.Version = "stripe-v1"
		a.Units = len(prog.Clients)
		first := hard.firsts()
		for i := range a.Shard {
			a.Shard[i] = int32(first[hard.find(i)] % n)
		}
	default:
		return nil, fmt.Errorf("sharding.strategy %q: must be %s or %s", strategy, ShardingAuto, ShardingStripe)
	}
	if err := a.expect(prog, sends); err != nil {
		return nil, err
	}
	a.Hash = assignmentHash(a.Version, n, a.Shard)
	return a, nil
}

// expect fills ExpectedByShard and the per-shard totals, with the trie walk
// that counts Expected, so that they agree to the delivery.
func (a *Assignment) expect(prog *Program, sends []int64) error {
	shareShard := make([]int, prog.ShareGroups())
	for i := range prog.Clients {
		for _, s := range prog.Clients[i].Subscriptions {
			if s.ShareKey >= 0 {
				shareShard[s.ShareKey] = int(a.Shard[i])
			}
		}
	}
	byShard := deliveryClasses{n: a.Shards, share: shareShard, noun: "shards",
		of: func(c int) int { return int(a.Shard[c]) }}
	a.ExpectedByShard = make([][]int, len(prog.Clients))
	err := expectationTables(prog, byShard, func(c int, table []int) { a.ExpectedByShard[c] = table })
	if err != nil {
		return err
	}
	a.Sends, a.Deliveries = make([]int64, a.Shards), make([]int64, a.Shards)
	for i := range prog.Clients {
		table := a.ExpectedByShard[i]
		if table == nil {
			continue
		}
		own := a.Shard[i]
		a.Sends[own] = satAdd(a.Sends[own], sends[i])
		sum := 0
		for s, k := range table {
			sum += k
			d := satMul(sends[i], int64(k))
			a.Deliveries[s] = satAdd(a.Deliveries[s], d)
			if s != int(own) {
				a.CrossDeliveries = satAdd(a.CrossDeliveries, d)
			}
		}
		if sum != prog.Clients[i].Publish.Expected {
			// The same walk as Expected's, by another class: unreachable.
			return fmt.Errorf("shard assignment: %s expects %d deliveries a message by shard, %d in all", &prog.Clients[i], sum, prog.Clients[i].Publish.Expected)
		}
	}
	return nil
}

// PeakRates returns each shard's publish and delivery rates at the target
// rate (messages per second, as Program.PeakRate): what its clients send,
// and what is delivered to them.
func (a *Assignment) PeakRates(prog *Program) (sent, received []float64) {
	sent, received = make([]float64, a.Shards), make([]float64, a.Shards)
	// Publishers share tables: add their rates per table, then spread
	// each table once, O(publishers + tables × shards).
	perTable := map[*int]float64{}
	var order [][]int
	for i := range prog.Clients {
		pub := prog.Clients[i].Publish
		table := a.ExpectedByShard[i]
		if pub == nil || pub.Schedule.Interval <= 0 || table == nil {
			continue
		}
		r := 1e9 / float64(pub.Schedule.Interval)
		sent[a.Shard[i]] += r
		if _, ok := perTable[&table[0]]; !ok {
			order = append(order, table)
		}
		perTable[&table[0]] += r
	}
	for _, table := range order {
		r := perTable[&table[0]]
		for s, k := range table {
			received[s] += r * float64(k)
		}
	}
	return sent, received
}

// assignmentHash is the hex SHA-256 of the version, n and the shard of
// every client (two bytes each, little-endian: n ≤ MaxShards).
func assignmentHash(version string, n int, shard []int32) string {
	h := sha256.New()
	buf := make([]byte, 0, 4096)
	buf = append(buf, version...)
	buf = append(buf, 0)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(n))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(shard)))
	for _, s := range shard {
		if len(buf)+2 > cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
		buf = binary.LittleEndian.AppendUint16(buf, uint16(s))
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}

// shareUnion joins the members of every $share group (and groups that
// share a member): the hard constraint, never cut.
func shareUnion(prog *Program) *unionFind {
	u := newUnionFind(len(prog.Clients))
	first := make([]int, prog.ShareGroups())
	for k := range first {
		first[k] = -1
	}
	for i := range prog.Clients {
		for _, s := range prog.Clients[i].Subscriptions {
			if s.ShareKey < 0 {
				continue
			}
			if first[s.ShareKey] < 0 {
				first[s.ShareKey] = i
			} else {
				u.union(first[s.ShareKey], i)
			}
		}
	}
	return u
}

// packAuto is the auto strategy (see the file comment).
func packAuto(prog *Program, a *Assignment, sends []int64, hard *unionFind) {
	n := a.Shards
	clients := len(prog.Clients)
	msgs, soft := linkClients(prog, sends)
	// The soft links include the hard ones.
	for i := 0; i < clients; i++ {
		soft.union(i, hard.find(i))
	}

	// Weights: w = conns/C + msgs/M, scaled by C·M to stay in integers (a
	// float sum could differ between machines that fuse multiply-adds).
	var total int64
	for _, m := range msgs {
		total = satAdd(total, m)
	}
	wConn, wMsg := uint64(total), uint64(clients)
	if total == 0 {
		wConn, wMsg = 1, 0
	}
	weight := func(c int) u128 { return mul64(wConn, 1).add(mul64(wMsg, uint64(msgs[c]))) }
	var sum u128
	for c := 0; c < clients; c++ {
		sum = sum.add(weight(c))
	}

	// Units, numbered in the order of their first client, and their
	// members in client order.
	unitOf := make([]int32, clients)
	index := make([]int32, clients) // by union-find root
	for i := range index {
		index[i] = -1
	}
	var units []unit
	for c := 0; c < clients; c++ {
		r := soft.find(c)
		if index[r] < 0 {
			index[r] = int32(len(units))
			units = append(units, unit{first: c})
		}
		u := &units[index[r]]
		unitOf[c] = index[r]
		u.size++
		u.w = u.w.add(weight(c))
	}
	start := make([]int32, len(units)+1)
	for c := 0; c < clients; c++ {
		start[unitOf[c]+1]++
	}
	for i := range units {
		start[i+1] += start[i]
	}
	members := make([]int32, clients)
	fill := append([]int32(nil), start[:len(units)]...)
	for c := 0; c < clients; c++ {
		members[fill[unitOf[c]]] = int32(c)
		fill[unitOf[c]]++
	}
	a.Units = len(units)

	order := make([]int, len(units))
	for i := range order {
		order[i] = i
	}
	sortUnits(order, units)

	loads := &shardLoads{load: make([]u128, n), heap: make([]int, n), pos: make([]int, n)}
	for s := range n {
		loads.heap[s], loads.pos[s] = s, s
	}
	// A unit fits when w ≤ 1.1·sum/n, that is 10·n·w ≤ 11·sum.
	capacity := sum.mulSmall(11)
	firstHard := hard.firsts()
	for _, ui := range order {
		u := &units[ui]
		mem := members[start[ui]:start[ui+1]]
		// Whole: when it fits; when it has fewer clients than there are
		// shards (striping could not spread it over them all, and a pair
		// keeps its latency on one clock); when it is one share group.
		if u.size < n || u.w.mulSmall(10*uint64(n)).lessEq(capacity) || hard.size[hard.find(u.first)] == u.size {
			s := loads.least()
			for _, c := range mem {
				a.Shard[c] = int32(s)
			}
			loads.add(s, u.w)
			continue
		}
		// Split: share groups whole, heaviest first, then every other
		// client round-robin in client order from the least-loaded shard.
		a.Split++
		var pieces []unit
		pieceOf := map[int]int{}
		for _, c := range mem {
			r := hard.find(int(c))
			if hard.size[r] == 1 {
				continue
			}
			k, ok := pieceOf[r]
			if !ok {
				k = len(pieces)
				pieceOf[r] = k
				pieces = append(pieces, unit{first: firstHard[r]})
			}
			pieces[k].size++
			pieces[k].w = pieces[k].w.add(weight(int(c)))
		}
		porder := make([]int, len(pieces))
		for i := range porder {
			porder[i] = i
		}
		sortUnits(porder, pieces)
		pieceShard := make([]int, len(pieces))
		for _, pi := range porder {
			s := loads.least()
			pieceShard[pi] = s
			loads.add(s, pieces[pi].w)
		}
		next := loads.least()
		for _, c := range mem {
			r := hard.find(int(c))
			if hard.size[r] > 1 {
				a.Shard[c] = int32(pieceShard[pieceOf[r]])
				continue
			}
			a.Shard[c] = int32(next)
			loads.add(next, weight(int(c)))
			next = (next + 1) % n
		}
	}
}

// unit is a set of clients placed together: its first client (the
// smallest index), its size and its weight.
type unit struct {
	first, size int
	w           u128
}

// sortUnits orders units heaviest first, ties by their first client.
func sortUnits(order []int, units []unit) {
	slices.SortFunc(order, func(x, y int) int {
		a, b := &units[x], &units[y]
		switch {
		case b.w.less(a.w):
			return -1
		case a.w.less(b.w):
			return 1
		}
		return a.first - b.first
	})
}

// linkClients joins every publisher with the clients its messages reach,
// walking the subscription trie once per distinct topic, and counts each
// client's planned messages: its sends, its deliveries (every message on a
// topic its filter matches; a share group's to its first member), a
// requester's answers and a responder's answers sent. A client whose
// filters overlap counts a message once per filter: a weight, not an
// expectation.
func linkClients(prog *Program, sends []int64) (msgs []int64, u *unionFind) {
	clients := len(prog.Clients)
	u = newUnionFind(clients)
	msgs = append([]int64(nil), sends...)
	var ix subscriptionIndex
	type sub struct{ client, node, share int32 }
	var subs []sub
	for i := range prog.Clients {
		for _, s := range prog.Clients[i].Subscriptions {
			_, filter, err := SplitShare(s.Filter)
			if err != nil {
				continue // validated at load time; unreachable
			}
			subs = append(subs, sub{client: int32(i), node: ix.node(filter).id, share: int32(s.ShareKey)})
		}
	}
	rep := make([]int32, ix.nodes+1) // a subscriber of each filter
	for i := range rep {
		rep[i] = -1
	}
	for _, s := range subs {
		if rep[s.node] < 0 {
			rep[s.node] = s.client
		}
	}
	// The distinct topics, each with its first publisher and the sends of
	// all of them; the topic's messages reach the filters its walk finds.
	topics := map[string]int32{}
	topicOf := make([]int32, clients)
	var topicPub []int
	var topicSends []int64
	for i := range prog.Clients {
		pub := prog.Clients[i].Publish
		if pub == nil {
			continue
		}
		k, ok := topics[pub.Topic]
		if !ok {
			k = int32(len(topicPub))
			topics[pub.Topic] = k
			topicPub = append(topicPub, i)
			topicSends = append(topicSends, 0)
		}
		topicOf[i] = k
		topicSends[k] = satAdd(topicSends[k], sends[i])
	}
	arrivals := make([]int64, ix.nodes+1)
	live := make([]bool, ix.nodes+1)
	reaches := make([]bool, len(topicPub))
	for k, p := range topicPub {
		ix.match(prog.Clients[p].Publish.Topic, func(n *trieNode) {
			if rep[n.id] < 0 {
				return // the root or an inner level: no filter ends here
			}
			live[n.id], reaches[k] = true, true
			arrivals[n.id] = satAdd(arrivals[n.id], topicSends[k])
			u.union(p, int(rep[n.id]))
		})
	}
	// Publishers on a topic someone hears are joined to its first (on a
	// topic no one hears, they stay apart: nothing to measure together).
	for i := range prog.Clients {
		if prog.Clients[i].Publish != nil && reaches[topicOf[i]] {
			u.union(topicPub[topicOf[i]], i)
		}
	}
	shareSeen := make([]bool, prog.ShareGroups())
	for _, s := range subs {
		if !live[s.node] {
			continue
		}
		u.union(int(s.client), int(rep[s.node]))
		switch {
		case s.share < 0:
			msgs[s.client] = satAdd(msgs[s.client], arrivals[s.node])
		case !shareSeen[s.share]:
			// One copy per message for the whole share group.
			shareSeen[s.share] = true
			msgs[s.client] = satAdd(msgs[s.client], arrivals[s.node])
		}
	}
	for i := range prog.Clients {
		c := &prog.Clients[i]
		if prog.Plan.Groups[c.Group].Respond != nil {
			msgs[i] = satAdd(msgs[i], msgs[i]) // one answer a request
		}
		if pub := c.Publish; pub != nil && pub.ExpectedResponses > 0 {
			msgs[i] = satAdd(msgs[i], satMul(sends[i], int64(pub.ExpectedResponses)))
		}
	}
	return msgs, u
}

// unionFind is a disjoint-set forest over clients, by size with path
// halving.
type unionFind struct {
	parent, size []int
}

func newUnionFind(n int) *unionFind {
	u := &unionFind{parent: make([]int, n), size: make([]int, n)}
	for i := range u.parent {
		u.parent[i], u.size[i] = i, 1
	}
	return u
}

func (u *unionFind) find(x int) int {
	for u.parent[x] != x {
		u.parent[x] = u.parent[u.parent[x]]
		x = u.parent[x]
	}
	return x
}

func (u *unionFind) union(x, y int) {
	x, y = u.find(x), u.find(y)
	if x == y {
		return
	}
	if u.size[x] < u.size[y] || u.size[x] == u.size[y] && y < x {
		x, y = y, x
	}
	u.parent[y] = x
	u.size[x] += u.size[y]
}

// firsts returns, by root, the smallest member of each set.
func (u *unionFind) firsts() []int {
	first := make([]int, len(u.parent))
	for i := range first {
		first[i] = -1
	}
	for i := range u.parent {
		if r := u.find(i); first[r] < 0 {
			first[r] = i
		}
	}
	return first
}

// shardLoads is a min-heap of the shards by load, ties to the lowest
// index. Loads only grow, so a changed shard only moves down.
type shardLoads struct {
	load []u128
	heap []int // shard numbers
	pos  []int // by shard, its place in heap
}

// before reports whether shard a comes before shard b: lighter, or as
// light and numbered lower.
func (h *shardLoads) before(a, b int) bool {
	return h.load[a].less(h.load[b]) || h.load[a] == h.load[b] && a < b
}

// least is the lightest shard.
func (h *shardLoads) least() int { return h.heap[0] }

// add gives shard s weight w more.
func (h *shardLoads) add(s int, w u128) {
	h.load[s] = h.load[s].add(w)
	i := h.pos[s]
	for {
		c := 2*i + 1
		if c >= len(h.heap) {
			break
		}
		if c+1 < len(h.heap) && h.before(h.heap[c+1], h.heap[c]) {
			c++
		}
		if !h.before(h.heap[c], h.heap[i]) {
			break
		}
		h.heap[i], h.heap[c] = h.heap[c], h.heap[i]
		h.pos[h.heap[i]], h.pos[h.heap[c]] = i, c
		i = c
	}
}

// u128 is an unsigned 128-bit integer, for exact weights.
type u128 struct{ hi, lo uint64 }

func mul64(a, b uint64) u128 {
	hi, lo := bits.Mul64(a, b)
	return u128{hi, lo}
}

func (x u128) add(y u128) u128 {
	lo, carry := bits.Add64(x.lo, y.lo, 0)
	return u128{x.hi + y.hi + carry, lo}
}

// mulSmall multiplies by k; the weights stay far below 2^128 (at most
// 2^83 for a plan, times 11·MaxShards).
func (x u128) mulSmall(k uint64) u128 {
	hi, lo := bits.Mul64(x.lo, k)
	return u128{x.hi*k + hi, lo}
}

func (x u128) less(y u128) bool { return x.hi < y.hi || x.hi == y.hi && x.lo < y.lo }

func (x u128) lessEq(y u128) bool { return !y.less(x) }
