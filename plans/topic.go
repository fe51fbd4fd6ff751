package plans

import (
	"errors"
	"fmt"
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
type subscriptionIndex struct {
	root trieNode
}

type trieNode struct {
	children map[string]*trieNode
	subs     []indexedSub // subscriptions whose filter ends here
}

// indexedSub is one subscription of one client. A shared subscription
// delivers once per share name and filter, so those are counted by key.
type indexedSub struct {
	client int    // index into Program.Clients
	group  int    // the client's group
	share  string // "" for an ordinary subscription
	filter string // without the $share prefix
	key    int    // ClientSubscription.ShareKey, -1 when share is ""
	// noLocal: the broker does not send the client its own messages
	// through this subscription.
	noLocal bool
}

func (ix *subscriptionIndex) add(s indexedSub) {
	n := &ix.root
	for l := range strings.SplitSeq(s.filter, "/") {
		if n.children == nil {
			n.children = map[string]*trieNode{}
		}
		c := n.children[l]
		if c == nil {
			c = &trieNode{}
			n.children[l] = c
		}
		n = c
	}
	n.subs = append(n.subs, s)
}

// match calls fn for every subscription whose filter matches topic.
func (ix *subscriptionIndex) match(topic string, fn func(indexedSub)) {
	levels := strings.Split(topic, "/")
	dollar := strings.HasPrefix(topic, "$")
	var walk func(n *trieNode, i int)
	walk = func(n *trieNode, i int) {
		if n.children == nil {
			if i == len(levels) {
				for _, s := range n.subs {
					fn(s)
				}
			}
			return
		}
		wild := !(i == 0 && dollar)
		if wild {
			if c := n.children["#"]; c != nil {
				for _, s := range c.subs {
					fn(s)
				}
			}
		}
		if i == len(levels) {
			for _, s := range n.subs {
				fn(s)
			}
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
