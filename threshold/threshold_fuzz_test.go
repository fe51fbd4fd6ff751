package threshold

import (
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mqplan/mqplan/metric"
)

// thFuzzSeeds are expressions that exercise every branch of the rewriter.
var thFuzzSeeds = []string{
	"loss_rate < 0.1% and (dup_rate <= 5%) or sent % 2 == 0 and 10%3 > 0",
	"0B% and 0%and x", // a size before %, a word stuck to %: no percentage
	"p99 < 10ms and dup_rate < 0.001",
	"p99 < 1m30s or p50 < 1.5s or p90 < .5s or p95 < 250µs or ack.max < 250μs",
	"groups.g1.p99 < groups.g10ms.p99",
	`groups["10ms"].p99 < 1s and groups['5s'].sent > 0 and groups["a\"1s"].sent > 0`,
	"groups[`a``10ms`].p99 < 1s",
	"p99 < 1s // 10ms\n and /* 5s */ p50 < 1ms",
	"p99 < 1e3s or 0x10s or 1_000ms or 10msx or 10 ms or 1..5 or #1s or a?.5s",
	"1s.5s 1s.x 1h0.5m",
	"\"unterminated 10ms",
	"`unterminated 10ms",
	"/* unterminated 10ms",
	"p99 < 1s \xff\xfe 2s",
	"é1s 1sé ١s",
	"m < 2GiB + 1.5MiB + .5KiB + 1_000KB + 512B + 1kib + 1Mb or 2GiBx or 2G or 0x1b or 1e3KB or 1.0001KB or 1m or 1mb",
}

// thLiteralRe is the grammar of a rewritten duration literal: (number
// unit)+; thSizeRe of a size literal: a number (digits grouped by _) and
// one size unit, in any case; thPercentRe of a percentage: a number and %.
var (
	thLiteralRe = regexp.MustCompile(`^(?:(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+$`)
	thSizeRe    = regexp.MustCompile(`^(?:[0-9]+(?:_[0-9]+)*(?:\.[0-9]+(?:_[0-9]+)*)?|\.[0-9]+(?:_[0-9]+)*)(?i:b|kb|kib|mb|mib|gb|gib)$`)
	thPercentRe = regexp.MustCompile(`^(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)%$`)
)

// FuzzThresholdRewrite checks that the literal rewriter never panics,
// preserves everything outside number+unit tokens byte for byte, maps
// every column of its output inside the source, rewrites only well-formed
// literals that do not touch an identifier, and leaves its own output alone.
func FuzzThresholdRewrite(f *testing.F) {
	for _, s := range thFuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		rw := rewriteDurations(src)
		checkRewrite(t, src, rw)
		for _, s := range rw.segs {
			lit := src[s.srcByte:s.srcByteEnd]
			if s.size && !thSizeRe.MatchString(lit) {
				t.Fatalf("rewrote %q, which is not a size literal, in %q", lit, src)
			}
			if s.percent && !thPercentRe.MatchString(lit) {
				t.Fatalf("rewrote %q, which is not a percentage, in %q", lit, src)
			}
			if !s.size && !s.percent && !thLiteralRe.MatchString(lit) {
				t.Fatalf("rewrote %q, which is not a duration literal, in %q", lit, src)
			}
			if lit[0] != '.' {
				if prev, _ := utf8.DecodeLastRuneInString(src[:s.srcByte]); s.srcByte > 0 && prev != utf8.RuneError && isAlnum(prev) {
					t.Fatalf("rewrote %q inside an identifier in %q", lit, src)
				}
			}
			if next, _ := utf8.DecodeRuneInString(src[s.srcByteEnd:]); s.srcByteEnd < len(src) && next != utf8.RuneError && isAlnum(next) {
				t.Fatalf("rewrote %q, which runs on into an identifier, in %q", lit, src)
			}
		}
		if again := rewriteDurations(rw.out); again.out != rw.out {
			t.Fatalf("rewriting %q twice changed it again: %q", rw.out, again.out)
		}
	})
}

// FuzzThresholdCompile checks that compiling any expression never panics,
// that every error is one line and points inside the expression, and that
// evaluating whatever compiles never panics either.
func FuzzThresholdCompile(f *testing.F) {
	for _, s := range thFuzzSeeds {
		f.Add(s)
	}
	for _, s := range []string{
		"p99 < 10", "p98 < 1s", "groups.typo.p99 < 1s", `groups["my-group"].p99 < 1s`, "phases.nope.sent > 0",
		"p99", "sent % received == 0", "sent > 0 ? p99 < 1s : false", "not (loss_rate > 0.01)",
		"let x = 1; x > 0", "all([1], # > 0)", "$env.p99 < 1s", "p99 * loss_rate < 1s",
		// Alternatives that read nothing of this run.
		"p99 > 1h or baseline.p99 >= 0ms", "p99 > 1h or 0 < 1", "not (p99 > 1h and (1 < 2))",
		"baseline.sent > 0 ? p99 < 1s : true", "(baseline.p99 > 1ms ? p99 : 0ms) < 10ms", "(p99 > 1h) != (0 < 1) or false",
		// Sizes, and whole-run metrics in scopes.
		"broker.rss.max < 2GiB", "self.rss.max < 200MiB", "broker.memory.max < 1GiB", "sent < 2GiB", "p99 < 1KB",
		"broker.rss.max < 1.0001KB", "broker.rss.max < 9999999999GiB", "broker.rss.max < 2G", "broker.rss.max < 2 GiB",
		"received_bytes / received <= 1KiB", "1 / broker.rss.max > 0", "broker.rss.max < 100KB * broker.clients.max",
		"broker.rss.max / baseline.broker.rss.max < 1.1", "broker.rss.max < (sent > 0 ? 1GiB : 0)", "-1KB < sent_bytes % 2",
		"groups.sub.broker.cpu.max < 80", "phases.steady.broker.dropped == 0", "groups.sub.self.cpu.max < 100",
		// Stages, by name and by index.
		"stages.peak.p99 < 1s", "stages[1].sent > 0", `stages["0"].loss_rate == 0`, "stages[9].p99 < 1s", "stages[-1].sent > 0",
		"stages[0] > 1", "stages[1.5].sent > 0", "stages[0].connect.failed == 0", "groups[0].p99 < 1s",
		"stages[0].p99 <= baseline.stages[0].p99", "stages.peak.p99 < stages[0].p99 * 2",
	} {
		f.Add(s)
	}
	m := Measured{
		Top: metric.Set{"latency.p99": time.Millisecond, "latency.p50": time.Microsecond, "sent": 10, "received": 0,
			"loss_rate": 0.5, "recv_rate": 100.0, "ack.max": time.Second, "broker.rss.max": 1 << 30, "received_bytes": 5000},
		Groups: map[string]metric.Set{"sub": {"sent": 1, "latency.p99": time.Millisecond}},
		Stages: map[string]metric.Set{"peak": {"sent": 1, "latency.p99": time.Millisecond}},
	}
	env := NewEnv(Scopes{Groups: []string{"sub", "my-group"}, Phases: testPhases, Stages: []string{"peak", "1"}})
	f.Fuzz(func(t *testing.T, src string) {
		th, e := env.Compile(src)
		if (th == nil) == (e == nil) {
			t.Fatalf("%q gave threshold %v and error %v", src, th, e)
		}
		n := 0
		for range src {
			n++
		}
		if e != nil {
			// Placed as a plan places it: at line 3, column 7 of f.yaml.
			line, col := 3+e.Line, 7+e.Col
			if lines := strings.Count(src, "\n"); line < 3 || line > 3+lines || col < 7 || col > 7+n || e.Offset < 0 || e.Offset > n {
				t.Fatalf("%q: error at f.yaml:%d:%d (offset %d), outside the expression (%d runes): %s", src, line, col, e.Offset, n, e.Msg)
			}
			if strings.ContainsAny(e.Msg, "\n\r") || e.Msg == "" {
				t.Fatalf("%q: bad message %q", src, e.Msg)
			}
		}
		if th != nil {
			res := th.Eval(m)
			if !res.Pass && res.Reason == "" {
				t.Fatalf("%q failed without a reason", src)
			}
			th.Eval(Measured{})
		}
	})
}
