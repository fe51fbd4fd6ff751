package plans

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestMatchFilterSpec pins MatchFilter, the oracle of the trie test below,
// to the examples of MQTT 5 section 4.7 (and 3.1.1 section 4.7), so that
// the oracle is not merely checked against itself.
func TestMatchFilterSpec(t *testing.T) {
	tests := []struct {
		filter, topic string
		want          bool
	}{
		// 4.7.1.2: the multi-level wildcard, including the parent level.
		{"sport/tennis/player1/#", "sport/tennis/player1", true},
		{"sport/tennis/player1/#", "sport/tennis/player1/ranking", true},
		{"sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon", true},
		{"sport/#", "sport", true},
		{"#", "sport/tennis", true},
		{"#", "/", true},
		{"sport/tennis/#", "sport/tennisplayer1", false},
		// 4.7.1.3: the single-level wildcard fills exactly one level,
		// empty levels included.
		{"sport/tennis/+", "sport/tennis/player1", true},
		{"sport/tennis/+", "sport/tennis/player1/ranking", false},
		{"sport/+", "sport", false},
		{"sport/+", "sport/", true},
		{"+/+", "/finance", true},
		{"/+", "/finance", true},
		{"+", "/finance", false},
		{"+/tennis/#", "sport/tennis/player1", true},
		// 4.7.2: a leading wildcard does not match a topic starting with $.
		{"#", "$SYS/broker", false},
		{"+/monitor/Clients", "$SYS/monitor/Clients", false},
		{"$SYS/#", "$SYS/monitor/Clients", true},
		{"$SYS/monitor/+", "$SYS/monitor/Clients", true},
		// A $ later in the topic is an ordinary character.
		{"+/$x", "a/$x", true},
		{"a/+", "a/$x", true},
		// Levels are compared whole and case-sensitively.
		{"ACCOUNTS", "Accounts", false},
		{"a/b", "a/b/", false},
		{"a/b/", "a/b/", true},
		{"a//b", "a//b", true},
		{"a/+/b", "a//b", true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s on %s", tt.filter, tt.topic), func(t *testing.T) {
			if got := MatchFilter(tt.filter, tt.topic); got != tt.want {
				t.Errorf("MatchFilter(%q, %q) = %v, want %v", tt.filter, tt.topic, got, tt.want)
			}
		})
	}
}

// TestSubscriptionIndexMatchesOracle checks the topic trie that computes a
// plan's expected deliveries against MatchFilter, filter by filter, on
// random subscriptions and topics: for every topic, the trie must report
// the node of each distinct filter that matches exactly once, and no other
// (a node reported twice doubles its subscribers' expected deliveries, a
// missing one leaves deliveries that arrive counted as foreign). The
// alphabets are small so that filters and topics collide often, and
// include what the rules single out: +, # (also as the parent-level
// match), empty levels, $-topics (not matched by a leading wildcard), a $
// inside a topic, and $share subscriptions (matched on the filter after
// the group name).
func TestSubscriptionIndexMatchesOracle(t *testing.T) {
	cases := []struct {
		name   string
		seed   uint64
		rounds int // independent indexes
		subs   int // subscriptions per index
		topics int // topics checked per index
	}{
		{"few subscriptions, many topics", 1, 200, 5, 200},
		{"many subscriptions share trie nodes", 2, 50, 200, 200},
		{"one subscription at a time", 3, 2000, 1, 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 0x6d7170))
			var matched, checked int
			for range tc.rounds {
				var ix subscriptionIndex
				filterOf := map[*trieNode]string{} // a node is one filter
				for range tc.subs {
					f := randomFilter(rng)
					if err := ValidateFilter(f); err != nil {
						t.Fatalf("generated an invalid filter %q: %v", f, err)
					}
					_, filter, err := SplitShare(f)
					if err != nil {
						t.Fatal(err)
					}
					n := ix.node(filter)
					if g, ok := filterOf[n]; ok && g != filter {
						t.Fatalf("filters %q and %q share a trie node", g, filter)
					}
					filterOf[n] = filter
				}
				for range tc.topics {
					topic := randomTopic(rng)
					if err := ValidateTopic(topic); err != nil {
						t.Fatalf("generated an invalid topic %q: %v", topic, err)
					}
					got := map[*trieNode]int{}
					ix.match(topic, func(n *trieNode) { got[n]++ })
					for n, filter := range filterOf {
						want := 0
						if MatchFilter(filter, topic) {
							want = 1
							matched++
						}
						checked++
						if got[n] != want {
							t.Fatalf("topic %q, filter %q: the trie reports it %d times, MatchFilter says %d", topic, filter, got[n], want)
						}
					}
					// (match may also report inner nodes where no filter
					// ends: they hold no subscription and count nothing.)
				}
			}
			// A generator that never (or always) matches would prove nothing.
			if matched < checked/50 || matched > checked/2 {
				t.Fatalf("%d of %d pairs matched: the generator does not exercise both outcomes", matched, checked)
			}
			t.Logf("%d filter/topic pairs, %d matching", checked, matched)
		})
	}
}

// oracleLevels are the topic levels of the random topics and filters.
var oracleLevels = []string{"a", "b", "", "$x", "$SYS"}

// randomTopic returns a valid topic of 1 to 4 levels: empty levels and
// levels starting with $ included, anywhere.
func randomTopic(rng *rand.Rand) string {
	n := 1 + rng.IntN(4)
	levels := make([]string, n)
	for i := range levels {
		levels[i] = oracleLevels[rng.IntN(len(oracleLevels))]
	}
	if n == 1 && levels[0] == "" {
		levels[0] = "a" // the empty topic is not a topic
	}
	return strings.Join(levels, "/")
}

// randomFilter returns a valid filter of 1 to 5 levels, with + anywhere, #
// only as the last level, and sometimes as a $share subscription.
func randomFilter(rng *rand.Rand) string {
	n := 1 + rng.IntN(5)
	levels := make([]string, n)
	for i := range levels {
		switch r := rng.IntN(10); {
		case r < 3:
			levels[i] = "+"
		case r < 4 && i == n-1:
			levels[i] = "#"
		default:
			levels[i] = oracleLevels[rng.IntN(len(oracleLevels))]
		}
	}
	f := strings.Join(levels, "/")
	if f == "" {
		f = "+"
	}
	if rng.IntN(5) == 0 {
		f = fmt.Sprintf("$share/g%d/%s", rng.IntN(3), f)
	}
	return f
}
