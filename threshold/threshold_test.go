package threshold

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/bytesize"
	"github.com/mqplan/mqplan/metric"
)

// testPhases are the phase names the tests compile against, as a plan
// passes them (phase.Names).
var testPhases = []string{"connect", "subscribe", "warmup", "ramp", "steady", "drain", "disconnect"}

// testEnv is the environment the compile tests run against: two plain
// groups and one whose name needs groups["..."].
func testEnv() *Env {
	return NewEnv(Scopes{Groups: []string{"sub", "pub", "my-group"}, Phases: testPhases})
}

// mustCompile compiles one expression against testEnv.
func mustCompile(t *testing.T, expr string) *Threshold {
	t.Helper()
	th, err := testEnv().Compile(expr)
	if err != nil {
		t.Fatalf("Compile(%q): %v", expr, err)
	}
	return th
}

func TestThresholdRewrite(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"milliseconds", "p99 < 10ms", `p99 < duration("10ms")`},
		{"nanoseconds", "p99 > 500ns", `p99 > duration("500ns")`},
		{"microseconds us", "p99 > 250us", `p99 > duration("250us")`},
		{"microseconds micro sign", "p99 > 250µs", `p99 > duration("250µs")`},
		{"microseconds greek mu", "p99 > 250μs", `p99 > duration("250μs")`},
		{"seconds", "p99 < 1s", `p99 < duration("1s")`},
		{"minutes", "p99 < 2m", `p99 < duration("2m")`},
		{"hours", "p99 < 2h", `p99 < duration("2h")`},
		{"decimal", "p99 < 1.5s", `p99 < duration("1.5s")`},
		{"leading fraction", "p99 < .5s", `p99 < duration(".5s")`},
		{"compound", "p99 < 1m30s", `p99 < duration("1m30s")`},
		{"compound with fraction", "p99 < 1h2m3.5s", `p99 < duration("1h2m3.5s")`},
		{"no spaces", "p99<10ms&&p50<1ms", `p99<duration("10ms")&&p50<duration("1ms")`},
		{"in parentheses", "(p99<10ms)", `(p99<duration("10ms"))`},
		{"arithmetic", "p99 < 2*5ms+1us", `p99 < 2*duration("5ms")+duration("1us")`},
		{"identifiers with digits", "p99 < p999 and p50 < p90", "p99 < p999 and p50 < p90"},
		{"nested names with digits", "groups.g1.p99 < groups.g10ms.p99", "groups.g1.p99 < groups.g10ms.p99"},
		{"identifier ending like a unit", "x1s < 1s", `x1s < duration("1s")`},
		{"plain numbers", "loss_rate == 0 and recv_rate >= 190.5", "loss_rate == 0 and recv_rate >= 190.5"},
		{"double-quoted string", `groups["10ms"].p99 < 1s`, `groups["10ms"].p99 < duration("1s")`},
		{"single-quoted string", `groups['5s'].p99 < 1s`, `groups['5s'].p99 < duration("1s")`},
		{"escaped quote in string", `groups["a\"10ms"].p99 < 1s`, `groups["a\"10ms"].p99 < duration("1s")`},
		{"escaped backslash ends string", `groups["a\\"].p99 < 1s`, `groups["a\\"].p99 < duration("1s")`},
		{"raw string", "groups[`10ms`].p99 < 1s", "groups[`10ms`].p99 < duration(\"1s\")"},
		{"raw string with doubled backtick", "groups[`a``10ms`].p99 < 1s", "groups[`a``10ms`].p99 < duration(\"1s\")"},
		{"unterminated string", `groups["10ms`, `groups["10ms`},
		{"line comment", "p99 < 1s // not 10ms", `p99 < duration("1s") // not 10ms`},
		{"block comment", "/* 5s */ p99 < 1s", `/* 5s */ p99 < duration("1s")`},
		{"exponent is not a duration", "p99 < 1e3s", "p99 < 1e3s"},
		{"hex is not a duration", "p99 < 0x10s", "p99 < 0x10s"},
		{"underscores are not a duration", "p99 < 1_000ms", "p99 < 1_000ms"},
		{"unit run on", "p99 < 10msx", "p99 < 10msx"},
		{"unknown unit", "p99 < 10d", "p99 < 10d"},
		{"space before unit", "p99 < 10 ms", "p99 < 10 ms"},
		{"range", "1..5", "1..5"},
		{"pointer", "#1s", "#1s"},
		// expr reads "?." as one operator, then a number.
		{"optional chaining dot", "a?.5s", `a?.duration("5s")`},
		{"zero", "p99 > 0s", `p99 > duration("0s")`},
		{"dot then digit continues", "1s.5s", `duration("1s.5s")`},
		{"dot then letter ends", "1s.x", `duration("1s").x`},
		{"empty", "", ""},
		{"invalid utf-8 kept", "p99 < 1s \xff", "p99 < duration(\"1s\") \xff"},
		{"size GiB", "broker.rss.max < 2GiB", "broker.rss.max < 2147483648"},
		{"size KB is decimal", "m < 10KB", "m < 10000"},
		{"size bytes", "m < 512B", "m < 512"},
		{"size any case", "m < 1kib + 1Mb", "m < 1024 + 1000000"},
		{"size fraction", "m < 1.5MiB", "m < 1572864"},
		{"size leading fraction", "m < .5KiB", "m < 512"},
		{"size underscores", "m < 1_000KB", "m < 1000000"},
		{"size beside durations", "p99 < 1m and m < 1mb and p50 < 1ms", `p99 < duration("1m") and m < 1000000 and p50 < duration("1ms")`},
		{"size not whole is rewritten to 0", "m < 1.0001KB", "m < 0"},
		{"size run on", "m < 2GiBx", "m < 2GiBx"},
		{"size unit unknown", "m < 2G", "m < 2G"},
		{"size in a string", `groups["2GiB"].sent > 0`, `groups["2GiB"].sent > 0`},
		{"hex is not a size", "m < 0x1b", "m < 0x1b"},
		{"exponent is not a size", "m < 1e3KB", "m < 1e3KB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rw := rewriteDurations(tt.in)
			if rw.out != tt.want {
				t.Errorf("rewriteDurations(%q) = %q, want %q", tt.in, rw.out, tt.want)
			}
			checkRewrite(t, tt.in, rw)
		})
	}
}

func TestThresholdRewriteColumns(t *testing.T) {
	// "p99 < 250µs or p98 < 1s": µ is one rune (two bytes), as expr and
	// YAML count columns.
	src := "p99 < 250µs or p98 < 1s"
	rw := rewriteDurations(src)
	outRunes := []rune(rw.out)
	tests := []struct {
		name     string
		out, src int // rune offsets
	}{
		{"before any literal", 0, 0},
		{"operator before literal", 4, 4},
		{"duration( prefix maps to literal start", 6, 6},
		{"inside prefix", 10, 6},
		{"first digit", 16, 6},
		{"micro sign", 19, 9},
		{"closing quote maps to literal end", 21, 10},
		{"after first literal", len([]rune(rw.out[:strings.Index(rw.out, "p98")])), 15},
		{"end of text", len(outRunes), len([]rune(src))},
		{"past the end is clamped", len(outRunes) + 5, len([]rune(src))},
		{"negative is clamped", -3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rw.srcOffset(tt.out); got != tt.src {
				t.Errorf("srcOffset(%d) = %d, want %d (out %q)", tt.out, got, tt.src, rw.out)
			}
		})
	}
}

// checkRewrite verifies the rewriter's invariants: undoing each segment
// gives back the source byte for byte, each segment is duration("...")
// around its source text, and every output offset maps inside the source.
func checkRewrite(t *testing.T, src string, rw rewrite) {
	t.Helper()
	var undo strings.Builder
	outB := 0 // byte offset in rw.out
	srcB := 0
	for _, s := range rw.segs {
		if s.srcByte < srcB || s.srcByteEnd <= s.srcByte || s.srcByteEnd > len(src) {
			t.Fatalf("bad segment %+v in %q", s, src)
		}
		plain := src[srcB:s.srcByte]
		if !strings.HasPrefix(rw.out[outB:], plain) {
			t.Fatalf("text before segment %+v changed: out %q, src %q", s, rw.out, src)
		}
		undo.WriteString(plain)
		outB += len(plain)
		lit := src[s.srcByte:s.srcByteEnd]
		call := durPrefix + lit + durSuffix
		if s.percent {
			call = shiftPercent(strings.TrimSuffix(lit, "%"))
		}
		if s.size {
			call = strconv.FormatInt(s.bytes, 10)
			if want, err := bytesize.Parse(lit); err == nil && want != s.bytes || err != nil && s.bytes != 0 {
				t.Fatalf("segment %+v: %q rewritten to %d bytes", s, lit, s.bytes)
			}
		}
		if !strings.HasPrefix(rw.out[outB:], call) {
			t.Fatalf("segment %+v: out %q does not hold %q", s, rw.out[outB:], call)
		}
		undo.WriteString(lit)
		outB += len(call)
		srcB = s.srcByteEnd
	}
	if rw.out[outB:] != src[srcB:] {
		t.Fatalf("text after the last segment changed: out %q, src %q", rw.out, src)
	}
	undo.WriteString(src[srcB:])
	if undo.String() != src {
		t.Fatalf("undoing the rewrite gives %q, want %q", undo.String(), src)
	}
	// Rune counts as expr counts them (one per invalid byte): ranging over
	// a string yields exactly that.
	n := 0
	for range src {
		n++
	}
	if rw.srcRunes != n {
		t.Fatalf("srcRunes = %d, want %d", rw.srcRunes, n)
	}
	outN := 0
	for range rw.out {
		outN++
	}
	prev := 0
	for o := 0; o <= outN+1; o++ {
		got := rw.srcOffset(o)
		if got < 0 || got > n {
			t.Fatalf("srcOffset(%d) = %d, outside [0, %d] for %q", o, got, n, src)
		}
		if got < prev {
			t.Fatalf("srcOffset is not monotonic at %d: %d after %d", o, got, prev)
		}
		prev = got
	}
}

func TestCompileThresholdErrors(t *testing.T) {
	// Every threshold sits at plan.yaml line 20, column 5; col is where the
	// error must point (5 + the rune offset of the culprit).
	tests := []struct {
		name string
		expr string
		col  int
		msg  string
	}{
		{"unknown alias-like metric", "p98 < 10ms", 5, `unknown metric "p98"; did you mean "p99"?`},
		{"literals only", "1 < 2", 5, "reads no metric, so it gives the same verdict whatever the run measures; compare a metric, like p99 < 10ms"},
		{"true", "true", 5, "reads no metric, so it gives the same verdict whatever the run measures; compare a metric, like p99 < 10ms"},
		{"durations only", "10ms < 1s or not false", 5, "reads no metric, so it gives the same verdict whatever the run measures; compare a metric, like p99 < 10ms"},
		{"unknown metric twelve runes in", "sent > 0 or p98 < 1ms", 17, `unknown metric "p98"; did you mean "p99"?`},
		{"column after a rewritten duration", "p99 < 10ms and p98 < 1s", 20, `unknown metric "p98"; did you mean "p99"?`},
		{"column after a multibyte duration", "p99 < 250µs or p98 < 1s", 20, `unknown metric "p98"; did you mean "p99"?`},
		{"unknown family member", "latency.p98 < 1s", 13, `unknown metric "latency.p98"; did you mean "latency.p99"?`},
		{"unknown family member, no close name", "ack.foo < 1s", 9, `unknown metric "ack.foo" (ack.*: min, mean, p50, p90, p95, p99, p999, max, stddev)`},
		{"typo in family", "lantency.p99 < 1s", 5, `unknown metric "lantency.p99"; did you mean "latency.p99"?`},
		{"unknown metric, no close name", "bogus > 1", 5, `unknown metric "bogus" (metrics: sent, unsent, acked, expected, received, lost, lost_unsent, lost_unacked, lost_broker, lost_late, loss_rate, duplicates, dup_rate, unexpected, overlap_copies, out_of_order, ooo_rate, corrupted, send_rate, recv_rate, sent_bytes, received_bytes, latency.*, latency_local.*, latency_cross.*, clock.*, ack.*, requests, responses_expected, responses, responses_late, responses_duplicates, responses_sent, rtt.*, connect.*, subscribe.*, errors, disconnects, reconnects, churn.*, qos_downgrades, clients.*, lag.*, late_rate, broker.*, self.*, p50, p90, p95, p99, p999, groups.<name>.*, phases.<name>.*, stages.<name>.*)`},
		{"family alone", "latency < 1s", 5, "latency is a family of metrics; name one of latency.{min,mean,p50,p90,p95,p99,p999,max,stddev,cross_share}"},
		{"field of a leaf", "p99.x < 1s", 9, `unknown metric "p99.x": p99 has no fields`},
		{"field of a family member", "latency.p99.x < 1s", 17, `unknown metric "latency.p99.x": latency.p99 has no fields`},
		{"unknown group", "groups.typo.p99 < 1s", 12, `unknown group "typo" (groups: sub, pub, "my-group")`},
		{"group typo", "groups.sbu.p99 < 1s", 12, `unknown group "sbu"; did you mean "sub"?`},
		{"unknown quoted group", `groups["my_group"].p99 < 1s`, 12, `unknown group "my_group"; did you mean "my-group"?`},
		{"unknown metric in group", "groups.sub.p98 < 1s", 16, `unknown metric "p98"; did you mean "p99"?`},
		{"group without metric", "groups.sub > 1", 12, "groups.sub needs a metric, e.g. groups.sub.p99"},
		{"groups alone", "groups > 1", 5, "groups needs a group name and a metric, e.g. groups.sub.p99"},
		{"computed group name", "groups[sent].p99 < 1s", 12, `a name in [...] must be a quoted literal, such as groups["my-group"] (or a stage's index, stages[0])`},
		{"unknown phase", "phases.nope.sent > 0", 12, `unknown phase "nope" (phases: connect, subscribe, warmup, ramp, steady, drain, disconnect)`},
		{"phase typo", "phases.stedy.sent > 0", 12, `unknown phase "stedy"; did you mean "steady"?`},
		{"duration alone", "p99", 5, "p99 is a duration, not a condition; compare it, e.g. p99 < 10ms"},
		{"count alone", "groups.sub.sent", 5, "groups.sub.sent is a count, not a condition; compare it, e.g. groups.sub.sent > 0"},
		{"rate alone", "recv_rate", 5, "recv_rate is a rate, not a condition; compare it, e.g. recv_rate >= 100"},
		{"fraction alone", "loss_rate", 5, "loss_rate is a fraction, not a condition; compare it, e.g. loss_rate < 0.01"},
		{"arithmetic alone", "sent + 1", 5, "the threshold must be a condition (true or false), but it is a number computed from metrics"},
		{"duration against bare number", "p99 < 10", 11, "cannot compare p99 (a duration) with the bare number 10; give it a unit, e.g. 10ms"},
		{"bare number against duration", "2.5 > latency.max", 5, "cannot compare latency.max (a duration) with the bare number 2.5; give it a unit, e.g. 2.5ms"},
		{"duration against count", "p99 > sent", 9, "cannot compare p99 (a duration) with sent (a count)"},
		{"add duration and number", "p99 + 1 < 1s", 11, "cannot add p99 (a duration) with the bare number 1; give it a unit, e.g. 1ms"},
		{"and on a number", "sent and p99 < 1s", 5, "and needs conditions on both sides, but the left is sent (a count)"},
		{"not on a number", "not sent", 9, "not needs a condition, not sent (a count)"},
		{"duration divided", "p99 / 2 < 1s", 9, "durations cannot be divided; compare against a scaled duration instead (p99 < 2 * p50)"},
		{"negative duration", "p99 > -1s", 11, "unary - needs a number, not a duration"},
		{"quoted duration", `p99 < "10ms"`, 11, "write a duration without quotes: 10ms"},
		{"string", `p99 < "x"`, 11, `text "x" cannot be compared; thresholds compare numbers, durations and sizes`},
		{"space before unit", "p99 < 10 ms", 14, `unexpected "ms"; write a duration without a space, e.g. 10ms`},
		{"unexpected end", "sent > 0 and", 16, "unexpected end of expression"},
		{"out of range duration", "p99 < 1 or p99 < 9999999h", 22, "duration 9999999h is out of range"},
		{"other function", "abs(p99) < 1s", 5, "function abs is not supported in thresholds"},
		{"unknown function", "foo(p99) < 1s", 5, "unknown function foo"},
		{"nil", "p99 != nil", 12, "nil is not supported: a metric without samples already fails its threshold"},
		{"env", "$env.p99 < 1s", 5, "$env is not supported: name metrics directly"},
		{"let", "let x = 1; x > 0", 9, "let is not supported in thresholds"},
		{"list", "sent == [1, 2]", 13, "lists are not supported in thresholds"},
		{"in", "sent in [1, 2]", 10, "operator in is not supported in thresholds"},
		{"three-part name, unknown leaf", "broker.cpu.mx > 1", 16, `unknown metric "broker.cpu.mx"; did you mean "broker.cpu.max"?`},
		{"three-part name, stopped short", "broker.cpu > 1", 12, "broker.cpu is a family of metrics; name one of broker.cpu.{max,mean}"},
		{"size without its B", "broker.rss.max < 2G", 22, `bad number "2G"; sizes are written like 512B, 10KB (10×1000 bytes) or 2GiB (2×1024³ bytes)`},
		{"size against a count", "sent < 2GiB", 12, "cannot compare sent (a count) with the size 2GiB; sizes go with byte metrics (sent_bytes, received_bytes, broker.rss.max, self.rss.max, broker.memory.max) and numbers"},
		{"size against a duration", "1KB > p99", 5, "cannot compare p99 (a duration) with the size 1KB; sizes go with byte metrics (sent_bytes, received_bytes, broker.rss.max, self.rss.max, broker.memory.max) and numbers"},
		{"size against a rate", "recv_rate >= 1MB", 18, "cannot compare recv_rate (a rate) with the size 1MB; sizes go with byte metrics (sent_bytes, received_bytes, broker.rss.max, self.rss.max, broker.memory.max) and numbers"},
		{"size against a scoped count", "groups.sub.received > 10KiB", 27, "cannot compare groups.sub.received (a count) with the size 10KiB; sizes go with byte metrics (sent_bytes, received_bytes, broker.rss.max, self.rss.max, broker.memory.max) and numbers"},
		{"size plus a count", "sent + 1KB > 0", 12, "cannot add sent (a count) with the size 1KB; sizes go with byte metrics (sent_bytes, received_bytes, broker.rss.max, self.rss.max, broker.memory.max) and numbers"},
		{"byte count mixed with a count beside a size", "received_bytes + received < 1KB", 33, "cannot compare a number computed from metrics with the size 1KB; sizes go with byte metrics (sent_bytes, received_bytes, broker.rss.max, self.rss.max, broker.memory.max) and numbers"},
		{"byte metric against a duration", "p99 > self.rss.max", 9, "cannot compare p99 (a duration) with self.rss.max (a size)"},
		{"size times a size", "broker.rss.max < 1KB * 1KB", 26, "a size can only be multiplied by a number, not by another size"},
		{"number divided by a size", "1 / broker.memory.max < 2", 7, "a number cannot be divided by a size; divide the size by the number instead"},
		{"size times a duration", "broker.rss.max < 1KB * 1s", 26, "a duration can only be multiplied by a number"},
		{"size alone", "broker.memory.max", 5, "broker.memory.max is a size, not a condition; compare it, e.g. broker.memory.max < 1GiB"},
		{"size not whole bytes", "broker.rss.max < 1.0001KB", 22, "size 1.0001KB is not a whole number of bytes"},
		{"size out of range", "broker.rss.max < 9999999999GiB", 22, "size 9999999999GiB is out of range"},
		{"quoted size", `broker.rss.max < "2GiB"`, 22, "write a size without quotes: 2GiB"},
		{"space before size unit", "broker.rss.max < 2 GiB", 24, `unexpected "GiB"; write a size without a space, e.g. 2GiB`},
		{"size run on", "broker.rss.max < 2GiBx", 22, `bad number "2G"; sizes are written like 512B, 10KB (10×1000 bytes) or 2GiB (2×1024³ bytes)`},
		{"ternary of a size and a count", "broker.rss.max < (sent > 0 ? 1GiB : sent)", 41, "both branches of ? : must have the same type, not the size 1GiB and sent (a count)"},
		{"percent of a size", "broker.rss.max % 1KB == 0", 20, "% needs two whole numbers, not broker.rss.max (a size) and the size 1KB"},
		{"broker cpu under a group", "groups.sub.broker.cpu.max < 80", 16, "broker.cpu.max is a whole-run figure, not measured per group: write broker.cpu.max, without groups.sub."},
		{"broker dropped under a phase", "phases.steady.broker.dropped == 0", 19, "broker.dropped is a whole-run figure, not measured per phase: write broker.dropped, without phases.steady."},
		{"self cpu under a quoted group", `groups["my-group"].self.cpu.max < 100`, 24, `self.cpu.max is a whole-run figure, not measured per group: write self.cpu.max, without groups["my-group"].`},
		{"baseline broker under a group", "broker.rss.max < baseline.groups.pub.broker.rss.max", 42, "broker.rss.max is a whole-run figure, not measured per group: write baseline.broker.rss.max, without groups.pub."},
		{"broker memory under a phase, in a size comparison", "phases.drain.broker.memory.max < 1GiB", 18, "broker.memory.max is a whole-run figure, not measured per phase: write broker.memory.max, without phases.drain."},
		{"field of a literal", "(1).x > 0", 6, "only metric names have fields"},
		{"field of a duration", "1s.x > 0", 5, "only metric names have fields"},
		{"optional member", "groups?.sub.p99 < 1s", 13, "?. is not supported: a metric name either exists or is an error"},
		{"predicate", "all([1], # > 0)", 5, "function all is not supported in thresholds"},
		{"matches", `sent matches "x"`, 10, "operator matches is not supported in thresholds"},
		{"bad number", "p99 < 1e3s", 11, `bad number "1e3s"; durations are written like 10ms, 1.5s or 1m30s`},
		{"bad number after a duration", "p99 < 1s and sent > 10x", 25, `bad number "10x"; durations are written like 10ms, 1.5s or 1m30s`},
		{"empty", "  ", 5, "empty threshold; write a condition such as p99 < 10ms"},
		{"bad duration call", `p99 < duration("x")`, 20, `invalid duration "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, e := testEnv().Compile(tt.expr)
			if e == nil || th != nil {
				t.Fatalf("Compile(%q) = %v, error %v; want one error", tt.expr, th, e)
			}
			// The plan places the error at its own column plus e.Col.
			if col := 5 + e.Col; e.Line != 0 || col != tt.col || e.Offset != e.Col || e.Msg != tt.msg {
				t.Errorf("Compile(%q) error\n got line +%d, column %d: %s\nwant line +0, column %d: %s", tt.expr, e.Line, col, e.Msg, tt.col, tt.msg)
			}
			if strings.ContainsAny(e.Error(), "\n\r") {
				t.Errorf("error %q spans lines", e.Error())
			}
		})
	}
}

func TestCompileThresholdMultiLine(t *testing.T) {
	// A YAML | block keeps its newlines; its lines all start at the column
	// of the first, so an error on a later line moves down and keeps the
	// column within that line.
	_, e := testEnv().Compile("p99 < 10ms and\nloss_rate == 0 and\n  p98 < 1s")
	if e == nil {
		t.Fatal("compiled")
	}
	if e.Line != 2 || e.Col != 2 || e.Offset != 36 {
		t.Errorf("error at line +%d, column %d, offset %d; want +2, 2, 36", e.Line, e.Col, e.Offset)
	}
}

func TestCompileThresholdWithoutPosition(t *testing.T) {
	// A threshold given on the command line has no line: Error puts the
	// column into the message.
	_, e := testEnv().Compile("sent > 0 or p98 < 1ms")
	if e == nil {
		t.Fatal("compiled")
	}
	want := `unknown metric "p98"; did you mean "p99"? (at column 13 of the expression)`
	if e.Error() != want {
		t.Errorf("got %q, want %q", e.Error(), want)
	}
}

func TestCompileScopes(t *testing.T) {
	// Scopes are the caller's data: duplicates are ignored, and an empty
	// list says so.
	tests := []struct {
		name   string
		scopes Scopes
		expr   string
		msg    string
	}{
		{"duplicate groups listed once", Scopes{Groups: []string{"a", "b", "a"}}, "groups.zzzz.sent > 0", `unknown group "zzzz" (groups: a, b)`},
		{"no groups", Scopes{}, "groups.zzzz.sent > 0", `unknown group "zzzz" (the plan has no groups)`},
		{"no phases", Scopes{Groups: []string{"a"}}, "phases.steady.sent > 0", `unknown phase "steady" (the plan has no phases)`},
		{"example names the first group", Scopes{Groups: []string{"my-group"}}, "groups > 0", `groups needs a group name and a metric, e.g. groups["my-group"].p99`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, e := NewEnv(tt.scopes).Compile(tt.expr)
			if e == nil || e.Msg != tt.msg {
				t.Errorf("Compile(%q) = %v, want %q", tt.expr, e, tt.msg)
			}
		})
	}
}

func TestCompileThresholdValid(t *testing.T) {
	// Expressions that must compile, with what they read.
	tests := []struct {
		name  string
		expr  string
		reads []string
	}{
		{"plan-format examples", "p99 < 10ms and dup_rate < 0.001", []string{"latency.p99", "dup_rate"}},
		{"fraction equals zero", "loss_rate == 0", []string{"loss_rate"}},
		{"count", "connect.failed == 0", []string{"connect.failed"}},
		{"group rate against int", "groups.sub.recv_rate >= 190", []string{"groups.sub.recv_rate"}},
		{"group with dash", `groups["my-group"].p99 < 1m30s`, []string{`groups["my-group"].latency.p99`}},
		{"quoted plain group", `groups["sub"].sent > 0`, []string{"groups.sub.sent"}},
		{"single-quoted group", `groups['my-group'].sent > 0`, []string{`groups["my-group"].sent`}},
		{"phase", "phases.warmup.errors == 0 and phases.connect.connect.p99 < 1s", []string{"phases.warmup.errors", "phases.connect.connect.p99"}},
		{"alias and canonical are one read", "p99 < 10ms and latency.p99 > 1us and p50 < p99", []string{"latency.p99", "latency.p50"}},
		{"same metric in two scopes", "p99 < 1s and groups.sub.p99 < 1s and groups.pub.p99 < 1s", []string{"latency.p99", "groups.sub.latency.p99", "groups.pub.latency.p99"}},
		{"order of first use", "(sent > 0 or acked > 0) and sent < 10", []string{"sent", "acked"}},
		{"duration arithmetic", "p99 < 2 * p50 + 1ms and ack.max - ack.min < 1s", []string{"latency.p99", "latency.p50", "ack.max", "ack.min"}},
		{"number arithmetic", "lost / expected < 0.01 and sent % 2 == 0 and sent ** 2 > 1", []string{"lost", "expected", "sent"}},
		{"rate against float", "recv_rate >= 190.5 and send_rate > -1", []string{"recv_rate", "send_rate"}},
		{"count against float", "sent > 1.5", []string{"sent"}},
		{"not and symbols", "!(p99 > 1s) && not (errors > 0) || reconnects == 0", []string{"latency.p99", "errors", "reconnects"}},
		{"ternary", "sent > 0 ? received > 0 : true", []string{"sent", "received"}},
		{"bool equality", "(sent > 0) == (received > 0)", []string{"sent", "received"}},
		{"explicit duration call", `p99 < duration("10ms")`, []string{"latency.p99"}},
		{"durations in strings stay strings", `groups["my-group"].p99 < 5s`, []string{`groups["my-group"].latency.p99`}},
		{"comment", "p99 < 1s // 10ms would be strict", []string{"latency.p99"}},
		{"multi-line", "p99 < 1s and\n  loss_rate == 0", []string{"latency.p99", "loss_rate"}},
		{"every unit", "p99 < 1ns + 1us + 1µs + 1μs + 1ms + 1s + 1m + 1h", []string{"latency.p99"}},
		{"issue 9's memory threshold", "broker.rss.max < 2GiB", []string{"broker.rss.max"}},
		{"every size unit", "broker.memory.max < 1B + 1KB + 1KiB + 1MB + 1MiB + 1GB + 1GiB + 1kib + 1mb", []string{"broker.memory.max"}},
		{"size with a fraction and underscores", "self.rss.max < 1.5GiB and self.rss.max > 1_000KB and sent_bytes > .5KiB", []string{"self.rss.max", "sent_bytes"}},
		{"byte metric against a plain number, as before sizes", "broker.rss.max < 2147483648 and broker.rss.max < 2 * 1024 * 1024 * 1024", []string{"broker.rss.max"}},
		{"byte metrics with counts, as written before sizes", "received_bytes >= received * 1000 and sent_bytes % 2 == 0 and broker.rss.max < 1000 * broker.clients.max and received_bytes - sent > 0", []string{"received_bytes", "received", "sent_bytes", "broker.rss.max", "broker.clients.max", "sent"}},
		{"size arithmetic", "broker.rss.max - self.rss.max < 1GiB + 512MiB and -1KB < received_bytes", []string{"broker.rss.max", "self.rss.max", "received_bytes"}},
		{"size times a count", "broker.rss.max < 100KB * broker.clients.max + 50MiB", []string{"broker.rss.max", "broker.clients.max"}},
		{"size per count is a size", "received_bytes / received <= 1KiB and broker.rss.max / broker.clients.max < 100KB", []string{"received_bytes", "received", "broker.rss.max", "broker.clients.max"}},
		{"size ratio is a number", "broker.rss.max / baseline.broker.rss.max < 1.1 and broker.rss.max <= baseline.broker.rss.max * 1.10", []string{"broker.rss.max", "baseline.broker.rss.max"}},
		{"size ternary", "broker.rss.max < (sent > 0 ? 1GiB : 0)", []string{"broker.rss.max", "sent"}},
		{"number ternary on a count's condition", "broker.rss.max < (sent > 0 ? 2000000000 : 1000)", []string{"broker.rss.max", "sent"}},
		{"1m and 1ms stay durations beside sizes", "p99 < 1m and p99 < 1ms and broker.rss.max < 1mb", []string{"latency.p99", "broker.rss.max"}},
		{"whole-run metrics at the top", "broker.cpu.max < 80 and broker.dropped == 0 and self.cpu.max < 100 and broker.publish.received >= sent", []string{"broker.cpu.max", "broker.dropped", "self.cpu.max", "broker.publish.received", "sent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := mustCompile(t, tt.expr)
			var got []string
			for _, r := range th.Reads {
				got = append(got, r.String())
			}
			if strings.Join(got, " | ") != strings.Join(tt.reads, " | ") {
				t.Errorf("Reads of %q = %q, want %q", tt.expr, got, tt.reads)
			}
			if th.String() != tt.expr {
				t.Errorf("String() = %q", th.String())
			}
		})
	}
}

func TestMetricRefString(t *testing.T) {
	tests := []struct {
		name string
		ref  Ref
		want string
	}{
		{"top level", Ref{Metric: "latency.p99"}, "latency.p99"},
		{"group", Ref{Scope: "groups", Name: "sub", Metric: "recv_rate"}, "groups.sub.recv_rate"},
		{"group with dash", Ref{Scope: "groups", Name: "my-group", Metric: "latency.p99"}, `groups["my-group"].latency.p99`},
		{"group starting with a digit", Ref{Scope: "groups", Name: "1st", Metric: "sent"}, `groups["1st"].sent`},
		{"group with quote", Ref{Scope: "groups", Name: `a"b`, Metric: "sent"}, `groups["a\"b"].sent`},
		{"phase", Ref{Scope: "phases", Name: "steady", Metric: "errors"}, "phases.steady.errors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.ref.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}

	// What String prints reads back as the same reference.
	groups := []string{"sub", "my-group", "1st", `a"b`, "10ms", "and", "é",
		"not", "in", "true", "nil", "if", "$env", "tab\there", "é-x", `back\slash`}
	env := NewEnv(Scopes{Groups: groups, Phases: testPhases})
	for _, g := range groups {
		for _, m := range []metric.Name{"latency.p99", "sent", "connect.failed"} {
			ref := Ref{Scope: "groups", Name: g, Metric: m}
			th, err := env.Compile(ref.String() + " != " + ref.String())
			if err != nil {
				t.Errorf("%s: %v", ref, err)
				continue
			}
			if len(th.Reads) != 1 || th.Reads[0] != ref {
				t.Errorf("%s reads back as %v", ref, th.Reads)
			}
		}
	}
}

func TestThresholdEval(t *testing.T) {
	top := metric.Set{
		"latency.p99": 8 * time.Millisecond,
		"latency.p50": 2 * time.Millisecond,
		"dup_rate":    0.0,
		"loss_rate":   0.0,
		"sent":        1000,
		"received":    1000,
		"recv_rate":   200.0,
	}
	m := Measured{
		Top: top,
		Groups: map[string]metric.Set{
			"sub":      {"recv_rate": 150.0, "latency.p99": 30 * time.Millisecond},
			"my-group": {"sent": 5},
		},
		Phases: map[string]metric.Set{"warmup": {"errors": 0}},
	}
	tests := []struct {
		name   string
		expr   string
		m      Measured
		pass   bool
		reason string
	}{
		{"duration passes", "p99 < 10ms", m, true, ""},
		{"duration fails", "p99 < 5ms", m, false, "false"},
		{"canonical name", "latency.p99 <= 8ms", m, true, ""},
		{"compound duration", "p99 < 1m30s", m, true, ""},
		{"micro", "p99 > 250µs", m, true, ""},
		{"and of two", "p99 < 10ms and dup_rate < 0.001", m, true, ""},
		{"fraction equals int", "loss_rate == 0", m, true, ""},
		{"count", "sent == 1000 and received >= sent", m, true, ""},
		{"rate against int", "recv_rate >= 190", m, true, ""},
		{"group rate fails", "groups.sub.recv_rate >= 190", m, false, "false"},
		{"group with dash", `groups["my-group"].sent == 5`, m, true, ""},
		{"phase", "phases.warmup.errors == 0", m, true, ""},
		{"three-part name", "broker.cpu.max < 80 and broker.cpu.mean < 50", Measured{Top: metric.Set{"broker.cpu.max": 75.5, "broker.cpu.mean": 30.0}}, true, ""},
		{"three-part name fails", "broker.cpu.max < 70", Measured{Top: metric.Set{"broker.cpu.max": 75.5}}, false, "false"},
		{"bytes as arithmetic", "broker.rss.max < 2 * 1024 * 1024 * 1024 and self.rss.max < 2147483648", Measured{Top: metric.Set{"broker.rss.max": 1 << 30, "self.rss.max": 1 << 29}}, true, ""},
		{"process metrics absent", "broker.rss.max < 2147483648", m, false, "no samples for broker.rss.max"},
		{"size GiB passes", "broker.rss.max < 2GiB", Measured{Top: metric.Set{"broker.rss.max": 2<<30 - 1}}, true, ""},
		{"size GiB fails at its bytes", "broker.rss.max < 2GiB", Measured{Top: metric.Set{"broker.rss.max": 2 << 30}}, false, "false"},
		{"size GB is decimal", "broker.memory.max < 2GB", Measured{Top: metric.Set{"broker.memory.max": 2_000_000_001}}, false, "false"},
		{"size GB passes below 10^9 × 2", "broker.memory.max <= 2GB", Measured{Top: metric.Set{"broker.memory.max": 2_000_000_000}}, true, ""},
		{"size per count", "received_bytes / received <= 1KiB", Measured{Top: metric.Set{"received_bytes": 1024 * 1000, "received": 1000}}, true, ""},
		{"size times a count", "broker.rss.max < 100KB * broker.clients.max", Measured{Top: metric.Set{"broker.rss.max": 100_001, "broker.clients.max": 1}}, false, "false"},
		{"size against the baseline's", "self.rss.max <= baseline.self.rss.max * 1.10", Measured{Top: metric.Set{"self.rss.max": 110}, Baseline: &Measured{Top: metric.Set{"self.rss.max": 100}}}, true, ""},
		{"byte metric absent", "self.rss.max < 200MiB", m, false, "no samples for self.rss.max"},
		{"duration arithmetic", "p99 < 5 * p50", m, true, ""},
		{"float arithmetic", "received / sent > 0.99", m, true, ""},
		{"ternary", "sent > 0 ? p99 < 10ms : false", m, true, ""},
		{"missing top metric fails", "errors == 0", m, false, "no samples for errors"},
		{"missing metric fails even if or would pass", "p99 < 10ms or ack.p99 < 1ms", m, false, "no samples for ack.p99"},
		{"missing group metric", "groups.sub.p50 < 1s", m, false, "no samples for groups.sub.latency.p50"},
		{"group without a set", "groups.pub.sent > 0", m, false, "no samples for groups.pub.sent"},
		{"phase without a set", "phases.steady.sent > 0", m, false, "no samples for phases.steady.sent"},
		{"every missing metric is named", "errors == 0 and p95 < 1s", m, false, "no samples for errors, latency.p95"},
		{"nothing measured", "p99 < 10ms", Measured{}, false, "no samples for latency.p99"},
		{"nil value is no sample", "loss_rate == 0", Measured{Top: metric.Set{"loss_rate": nil}}, false, "no samples for loss_rate"},
		{"NaN is no sample", "loss_rate == 0", Measured{Top: metric.Set{"loss_rate": math.NaN()}}, false, "no samples for loss_rate"},
		{"wrong type fails", "p99 < 10ms", Measured{Top: metric.Set{"latency.p99": "fast"}}, false, "latency.p99: measured a string, which is not a duration"},
		{"int for duration fails", "p99 < 10ms", Measured{Top: metric.Set{"latency.p99": 5}}, false, "latency.p99: measured a int, which is not a duration"},
		{"duration for count fails", "sent > 0", Measured{Top: metric.Set{"sent": time.Second}}, false, "sent: measured a time.Duration, which is not a count"},
		{"int64 count accepted", "sent == 3", Measured{Top: metric.Set{"sent": int64(3)}}, true, ""},
		{"uint64 count accepted", "sent == 3", Measured{Top: metric.Set{"sent": uint64(3)}}, true, ""},
		{"huge uint64 count fails", "sent > 0", Measured{Top: metric.Set{"sent": uint64(math.MaxUint64)}}, false, "sent: count 18446744073709551615 is too large"},
		{"integral float count accepted", "sent == 3", Measured{Top: metric.Set{"sent": 3.0}}, true, ""},
		{"fractional float count fails", "sent == 3", Measured{Top: metric.Set{"sent": 3.5}}, false, "sent: measured a float64, which is not a count"},
		{"int rate accepted", "recv_rate >= 190", Measured{Top: metric.Set{"recv_rate": 200}}, true, ""},
		{"float32 rate accepted", "recv_rate >= 190", Measured{Top: metric.Set{"recv_rate": float32(200)}}, true, ""},
		{"infinite rate fails", "recv_rate > 1", Measured{Top: metric.Set{"recv_rate": math.Inf(1)}}, false, "recv_rate: measured +Inf, not a finite number"},
		{"division by zero fails, never passes", "sent / lost > 5", Measured{Top: metric.Set{"sent": 10, "lost": 0}}, false,
			"sent / lost is +Inf, not a finite number (a division by zero?): a threshold that is not a finite number fails"},
		{"NaN fails, even under not", "!(received / lost < 5)", Measured{Top: metric.Set{"received": 0, "lost": 0}}, false,
			"received / lost is NaN, not a finite number (a division by zero?): a threshold that is not a finite number fails"},
		{"non-finite inside parentheses names the whole expression", "(sent) / (lost) > 5 or p99 < 1s", Measured{Top: metric.Set{"sent": 1, "lost": 0, "latency.p99": time.Millisecond}}, false,
			"(sent) / (lost) > 5 or p99 < 1s is +Inf, not a finite number (a division by zero?): a threshold that is not a finite number fails"},
		{"negative infinity", "-sent / lost < 0", Measured{Top: metric.Set{"sent": 1, "lost": 0}}, false,
			"-sent / lost is -Inf, not a finite number (a division by zero?): a threshold that is not a finite number fails"},
		{"power overflow", "10 ** sent > 1", Measured{Top: metric.Set{"sent": 400}}, false,
			"10 ** sent is +Inf, not a finite number (a division by zero?): a threshold that is not a finite number fails"},
		{"finite division passes", "sent / lost > 5", Measured{Top: metric.Set{"sent": 10, "lost": 1}}, true, ""},
		{"run-time error fails", "sent % received == 0", Measured{Top: metric.Set{"sent": 1, "received": 0}}, false, "runtime error: integer divide by zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := mustCompile(t, tt.expr)
			res := th.Eval(tt.m)
			if res.Pass != tt.pass || res.Reason != tt.reason {
				t.Errorf("Eval(%q) = pass %v, reason %q; want pass %v, reason %q", tt.expr, res.Pass, res.Reason, tt.pass, tt.reason)
			}
			if len(res.Values) != len(th.Reads) {
				t.Fatalf("Values has %d entries, Reads %d", len(res.Values), len(th.Reads))
			}
			for i, v := range res.Values {
				if v.Ref != th.Reads[i] {
					t.Errorf("Values[%d].Ref = %v, want %v", i, v.Ref, th.Reads[i])
				}
				if v.Missing && v.Value != nil {
					t.Errorf("Values[%d] is missing but holds %v", i, v.Value)
				}
			}
		})
	}
}

func TestThresholdEvalValues(t *testing.T) {
	th := mustCompile(t, "p99 < 10ms and groups.sub.sent > 0 and loss_rate == 0")
	res := th.Eval(Measured{
		Top:    metric.Set{"latency.p99": 3 * time.Millisecond, "loss_rate": 0.0},
		Groups: map[string]metric.Set{"sub": {"sent": int32(7)}},
	})
	want := []Value{
		{Ref: Ref{Metric: "latency.p99"}, Value: 3 * time.Millisecond},
		{Ref: Ref{Scope: "groups", Name: "sub", Metric: "sent"}, Value: 7}, // converted to int
		{Ref: Ref{Metric: "loss_rate"}, Value: 0.0},
	}
	if !res.Pass || len(res.Values) != len(want) {
		t.Fatalf("Eval = %+v", res)
	}
	for i := range want {
		if res.Values[i] != want[i] {
			t.Errorf("Values[%d] = %#v, want %#v", i, res.Values[i], want[i])
		}
	}
}

func TestThresholdEvalNeverPanics(t *testing.T) {
	th := mustCompile(t, "p99 < 10ms and sent > 0 and recv_rate > 1 and groups.sub.loss_rate < 0.1")
	weird := []any{nil, "x", []int{1}, map[string]any{}, struct{}{}, (*int)(nil), true, int8(-1), uint8(1),
		complex(1, 2), math.NaN(), math.Inf(-1), time.Duration(-1), int64(math.MinInt64), float32(1.5), func() {}}
	for _, v := range weird {
		for _, name := range []metric.Name{"latency.p99", "sent", "recv_rate", "loss_rate"} {
			set := metric.Set{"latency.p99": time.Millisecond, "sent": 1, "recv_rate": 2.0, "loss_rate": 0.0}
			set[name] = v
			for _, m := range []Measured{
				{Top: set, Groups: map[string]metric.Set{"sub": set}},
				{Top: set},
				{Groups: map[string]metric.Set{"sub": nil}},
			} {
				res := th.Eval(m)
				if !res.Pass {
					if res.Reason == "" {
						t.Errorf("%s = %#v failed without a reason", name, v)
					}
					continue
				}
				// Only a value that converts to its kind's type may pass.
				md, _ := metric.Lookup(string(name))
				if conv, err := conform(md.Kind, v); err != nil || conv == nil {
					t.Errorf("%s = %#v passed", name, v)
				}
			}
		}
	}
	var nilTh *Threshold
	if res := nilTh.Eval(Measured{}); res.Pass || res.Reason == "" {
		t.Errorf("nil threshold: %+v", res)
	}
	if res := (&Threshold{}).Eval(Measured{}); res.Pass || res.Reason == "" {
		t.Errorf("zero threshold: %+v", res)
	}
}

func TestThresholdEvalConcurrent(t *testing.T) {
	// A compiled threshold is shared by every report writer; run it from
	// several goroutines under -race.
	th := mustCompile(t, "p99 < 10ms and groups.sub.recv_rate >= 190")
	m := Measured{
		Top:    metric.Set{"latency.p99": time.Millisecond},
		Groups: map[string]metric.Set{"sub": {"recv_rate": 200.0}},
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if res := th.Eval(m); !res.Pass {
					t.Errorf("Eval = %+v", res)
					return
				}
			}
		}()
	}
	wg.Wait()
}
