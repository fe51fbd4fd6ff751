package suggest

import (
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	tests := []struct {
		name, a, b string
		want       int
	}{
		{"equal", "name", "name", 0},
		{"empty", "", "abc", 3},
		{"insertion", "nme", "name", 1},
		{"deletion", "namme", "name", 1},
		{"substitution", "nane", "name", 1},
		{"swap is one edit", "nmae", "name", 1},
		{"runes, not bytes", "µs", "us", 1},
		{"swap in a long word", "keepalvie", "keepalive", 1},
		{"unrelated", "colour", "count", 4},
		{"too long", strings.Repeat("a", 65), "a", 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Distance(tt.a, tt.b); got != tt.want {
				t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
			if got := Distance(tt.b, tt.a); got != tt.want {
				t.Errorf("Distance(%q, %q) = %d, want %d (not symmetric)", tt.b, tt.a, got, tt.want)
			}
		})
	}
}

func TestLimit(t *testing.T) {
	tests := []struct {
		name, word string
		most, want int
	}{
		{"short", "p98", 3, 1},
		{"four runes", "urlz", 3, 1},
		{"five runes", "stedy", 3, 2},
		{"eight runes", "latency.", 3, 2},
		{"nine runes", "keepalvie", 3, 3},
		{"capped", "keepalvie", 2, 2},
		{"runes, not bytes", "µµµµ", 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Limit(tt.word, tt.most); got != tt.want {
				t.Errorf("Limit(%q, %d) = %d, want %d", tt.word, tt.most, got, tt.want)
			}
		})
	}
}

func TestClosest(t *testing.T) {
	percentiles := []string{"p50", "p90", "p95", "p99", "p999"}
	broker := []string{"url", "urls", "protocol", "connect_timeout", "tls", "source_addresses"}
	tests := []struct {
		name  string
		word  string
		cands []string
		limit int
		ties  Ties
		want  string
	}{
		{"nearest wins", "protocl", broker, 2, First, "protocol"},
		{"none within limit", "colour", broker, 2, First, ""},
		{"no candidates", "url", nil, 2, First, ""},
		{"exact", "tls", broker, 1, First, "tls"},
		// trls is one edit from urls and from tls: the plan keys keep the
		// first listed, names prefer the shared prefix.
		{"first listed wins a tie", "trls", broker, 1, First, "urls"},
		{"shared prefix wins a tie", "trls", broker, 1, Similar, "tls"},
		// p98 is one edit from p90, p95 and p99 alike.
		{"first listed among percentiles", "p98", percentiles, 1, First, "p90"},
		{"nearer number among percentiles", "p98", percentiles, 1, Similar, "p99"},
		{"nearer number, then first", "p97", percentiles, 1, Similar, "p95"},
		{"limit zero is exact only", "p98", percentiles, 0, Similar, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Closest(tt.word, tt.cands, tt.limit, tt.ties); got != tt.want {
				t.Errorf("Closest(%q, %q, %d, %v) = %q, want %q", tt.word, tt.cands, tt.limit, tt.ties, got, tt.want)
			}
		})
	}
}
