package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/plans"
)

func TestParseShards(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int // 0: refused
	}{
		{"one", "1", 1},
		{"ten", "10", 10},
		{"the limit", "1024", 1024},
		{"leading zero", "08", 8},
		{"zero", "0", 0},
		{"past the limit", "1025", 0},
		{"huge", "99999999999999999999", 0},
		{"negative", "-2", 0},
		{"plus sign", "+2", 0},
		{"spaces", " 2", 0},
		{"fraction", "2.5", 0},
		{"empty", "", 0},
		{"word", "auto", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := parseShards(tt.in)
			if tt.want == 0 {
				if err == nil || !strings.Contains(err.Error(), "1 to 1024") {
					t.Fatalf("parseShards(%q) = %d, %v; want an error naming the range", tt.in, n, err)
				}
				return
			}
			if err != nil || n != tt.want {
				t.Fatalf("parseShards(%q) = %d, %v; want %d", tt.in, n, err, tt.want)
			}
		})
	}
}

// FuzzParseShards: whatever the input, parseShards does not panic, and
// what it accepts is a count in range that reads back the same.
func FuzzParseShards(f *testing.F) {
	for _, s := range []string{"1", "8", "1024", "1025", "0", "-1", "", "0008", "1e3", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseShards(s)
		if err != nil {
			return
		}
		if n < 1 || n > plans.MaxShards {
			t.Fatalf("parseShards(%q) = %d, out of range", s, n)
		}
		if back, err := parseShards(strconv.Itoa(n)); err != nil || back != n {
			t.Fatalf("%d does not read back: %d, %v", n, back, err)
		}
	})
}

// TestExplainShardsCommand runs explain --shards as a user types it: the
// split follows the plan's explain, a bad count or a bad strategy is exit
// 2 with the reason, and the sharding field and --set agree.
func TestExplainShardsCommand(t *testing.T) {
	runCmdCases(t, []cmdCase{
		{name: "pairs over 4 shards", args: []string{"explain", "--shards", "4", "plans/1to1-qos1.yaml"},
			want: []string{"peak connections 200", "shards 4, assignment auto-v1, sha256 ", "0 of 4,500 planned (0 %)", "sub 25, pub 25"}},
		{name: "stripe from --set: pairs cut", args: []string{"explain", "--shards=3", "--set", "sharding.strategy=stripe", "plans/1to1-qos1.yaml"},
			want: []string{"assignment stripe-v1", "4,500 of 4,500 planned (100 %)"}},
		{name: "no --shards, no split", args: []string{"explain", "plans/1to1-qos1.yaml"}, absent: []string{"assignment"}},
		{name: "zero shards", args: []string{"explain", "--shards", "0", "plans/1to1-qos1.yaml"}, code: 2, want: []string{"give a whole number from 1 to 1024"}},
		{name: "too many shards", args: []string{"explain", "--shards", "5000", "plans/1to1-qos1.yaml"}, code: 2, want: []string{"give a whole number from 1 to 1024"}},
		{name: "bad strategy", args: []string{"explain", "--shards", "2", "--set", "sharding.strategy=strip", "plans/1to1-qos1.yaml"}, code: 2,
			want: []string{`sharding.strategy: must be auto or stripe, got "strip" (did you mean "stripe"?)`}},
	})
}
