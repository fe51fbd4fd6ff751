package plans

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// ValidateTopic checks a topic name for PUBLISH: non-empty, valid UTF-8,
// no NUL and no wildcard characters, at most 65535 bytes.
func ValidateTopic(t string) error {
	if t == "" {
		return errors.New("topic is empty")
	}
	if len(t) > 65535 {
		return fmt.Errorf("topic is %d bytes, the limit is 65535", len(t))
	}
	if !utf8.ValidString(t) {
		return errors.New("topic is not valid UTF-8")
	}
	if strings.ContainsRune(t, 0) {
		return errors.New("topic contains a NUL character")
	}
	if i := strings.IndexAny(t, "+#"); i >= 0 {
		return fmt.Errorf("topic %q contains the wildcard %q: wildcards are for subscriptions only", t, t[i])
	}
	return nil
}

// SilentShare is what a report says of a shared subscription (its whole
// filter, $share/GROUP/...) that received nothing: most often a broker
// without shared subscriptions took it for a plain topic nobody publishes
// to. One wording for every command that can notice it.
func SilentShare(filter string) string {
	return fmt.Sprintf("shared subscription %q received nothing: the broker may not support shared subscriptions (NATS, RabbitMQ and aedes take $share/... as a literal topic)", filter)
}

// SplitShare splits "$share/<group>/<filter>" into its share name and
// filter; for an ordinary filter, share is "".
func SplitShare(f string) (share, filter string, err error) {
	if !strings.HasPrefix(f, "$share/") {
		return "", f, nil
	}
	rest := f[len("$share/"):]
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return "", "", fmt.Errorf("shared subscription %q has no filter: write $share/<group>/<filter>", f)
	}
	share, filter = rest[:i], rest[i+1:]
	if share == "" {
		return "", "", fmt.Errorf("shared subscription %q has an empty group name", f)
	}
	if strings.ContainsAny(share, "+#") {
		return "", "", fmt.Errorf("shared subscription group %q must not contain + or #", share)
	}
	if filter == "" {
		return "", "", fmt.Errorf("shared subscription %q has an empty filter", f)
	}
	return share, filter, nil
}

// ValidateFilter checks a topic filter for SUBSCRIBE, including the
// $share/<group>/ form: + must fill a whole level, # must be the whole last level.
func ValidateFilter(f string) error {
	if f == "" {
		return errors.New("topic filter is empty")
	}
	if len(f) > 65535 {
		return fmt.Errorf("topic filter is %d bytes, the limit is 65535", len(f))
	}
	if !utf8.ValidString(f) {
		return errors.New("topic filter is not valid UTF-8")
	}
	if strings.ContainsRune(f, 0) {
		return errors.New("topic filter contains a NUL character")
	}
	_, filter, err := SplitShare(f)
	if err != nil {
		return err
	}
	levels := strings.Split(filter, "/")
	for i, l := range levels {
		switch {
		case l == "#":
			if i != len(levels)-1 {
				return fmt.Errorf("topic filter %q: # must be the last level", f)
			}
		case l == "+":
		case strings.ContainsAny(l, "+#"):
			return fmt.Errorf("topic filter %q: a wildcard must occupy a whole level (level %d is %q)", f, i+1, l)
		}
	}
	return nil
}

// MatchFilter reports whether topic matches filter (without a $share
// prefix). Topics starting with $ are not matched by a leading wildcard,
// as MQTT requires.
func MatchFilter(filter, topic string) bool {
	if strings.HasPrefix(topic, "$") && (strings.HasPrefix(filter, "+") || strings.HasPrefix(filter, "#")) {
		return false
	}
	for {
		fl, frest, fmore := strings.Cut(filter, "/")
		if fl == "#" {
			return true
		}
		tl, trest, tmore := strings.Cut(topic, "/")
		if fl != "+" && fl != tl {
			return false
		}
		if !fmore && !tmore {
			return true
		}
		if !fmore {
			return false
		}
		if !tmore {
			// "a/#" matches "a": the parent level.
			return frest == "#"
		}
		filter, topic = frest, trest
	}
}

// subscriptionIndex is a topic trie of every subscription of a plan, so
// that the deliveries a topic implies are counted once per publisher
// topic instead of matching every filter for every message.
//
// Most subscriptions need no bookkeeping per client: a client with a
// single ordinary subscription receives one copy of every message its
// filter matches, so a node keeps only how many such clients each group
// has there, and a topic costs the nodes it reaches, not the clients
// behind them (a million subscribers of "#" are one count). Shared
// subscriptions are counted the same way, once per (share name, filter).
// Only clients with several ordinary filters, or a no_local one, are kept
// one by one, since a client with two matching filters gets one copy and
// no_local depends on who publishes.
type subscriptionIndex struct {
	root trieNode
	// work counts the per-client subscriptions visited by match, so that
	// a plan whose expectations would take too long is refused instead.
	work int
	// nodes counts the trie's nodes: node ids run from 1 to nodes.
	nodes int32
}

type trieNode struct {
	children map[string]*trieNode
	// id numbers the node (from 1; the root is 0), so that a caller
	// keeps its own figures per filter in a slice (assign.go).
	id int32
	// plain and shares count, by class (the receiving group, or shard),
	// the single-subscription clients and the share groups whose filter
	// ends here.
	plain, shares []groupCount
	// subs are the subscriptions ending here that need a per-client
	// look: their client has several ordinary filters, or no_local.
	subs []indexedSub
}

// groupCount is n clients (or share groups) of one class: a group, or a
// shard (see deliveryClasses).
type groupCount struct {
	group, n int
}

// addCount adds one to class g in counts. The compiler adds the clients
// of a group one after another, so only the last entry is checked; the
// shards of striped clients alternate, which compact merges.
func addCount(counts []groupCount, g int) []groupCount {
	if k := len(counts) - 1; k >= 0 && counts[k].group == g {
		counts[k].n++
		return counts
	}
	return append(counts, groupCount{group: g, n: 1})
}

// indexedSub is one subscription kept per client (see subscriptionIndex).
type indexedSub struct {
	client int // index into Program.Clients
	group  int // the client's class (group or shard)
	// noLocal: the broker does not send the client its own messages
	// through this subscription.
	noLocal bool
}

// node returns the trie node of filter (without a $share prefix), making
// the path as needed.
func (ix *subscriptionIndex) node(filter string) *trieNode {
	n := &ix.root
	for l := range strings.SplitSeq(filter, "/") {
		if n.children == nil {
			n.children = map[string]*trieNode{}
		}
		c := n.children[l]
		if c == nil {
			ix.nodes++
			c = &trieNode{id: ix.nodes}
			n.children[l] = c
		}
		n = c
	}
	return n
}

// compact merges the entries of one class in the counts of n and of
// every node below it, so that a topic's walk costs a node's classes,
// not its clients (clients striped over shards alternate their classes).
// Counts that are already one entry a class are left as they are.
func (n *trieNode) compact() {
	n.plain, n.shares = mergeCounts(n.plain), mergeCounts(n.shares)
	for _, c := range n.children {
		c.compact()
	}
}

// mergeCounts returns counts with one entry per class, ordered by class
// when it had to merge.
func mergeCounts(counts []groupCount) []groupCount {
	merged := true // strictly increasing classes: already one entry each
	for i := 1; i < len(counts) && merged; i++ {
		merged = counts[i-1].group < counts[i].group
	}
	if merged {
		return counts
	}
	slices.SortStableFunc(counts, func(a, b groupCount) int { return cmp.Compare(a.group, b.group) })
	out := counts[:1]
	for _, gc := range counts[1:] {
		if last := &out[len(out)-1]; last.group == gc.group {
			last.n += gc.n
		} else {
			out = append(out, gc)
		}
	}
	return out
}

// match calls fn for every node holding a filter that matches topic. Each
// node is reached at most once per topic: a node is one filter, and a
// filter matches a topic in one way or not at all.
func (ix *subscriptionIndex) match(topic string, fn func(*trieNode)) {
	levels := strings.Split(topic, "/")
	dollar := strings.HasPrefix(topic, "$")
	var walk func(n *trieNode, i int)
	walk = func(n *trieNode, i int) {
		if n.children == nil {
			if i == len(levels) {
				fn(n)
			}
			return
		}
		wild := !(i == 0 && dollar)
		if wild {
			if c := n.children["#"]; c != nil {
				fn(c)
			}
		}
		if i == len(levels) {
			fn(n)
			return
		}
		if c := n.children[levels[i]]; c != nil {
			walk(c, i+1)
		}
		if wild && levels[i] != "+" {
			if c := n.children["+"]; c != nil {
				walk(c, i+1)
			}
		}
	}
	walk(&ix.root, 0)
}
