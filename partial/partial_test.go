package partial

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

// hist returns a histogram of mqplan's bounds holding vs (µs).
func hist(vs ...int64) *hdrhistogram.Histogram {
	h := stats.NewHistogram()
	for _, v := range vs {
		_ = h.RecordValue(v)
	}
	return h
}

// TestCellCarriesEveryField: every counter and histogram of
// stats.Metrics survives a cell's JSON round trip, and the derived
// figures are never written.
func TestCellCarriesEveryField(t *testing.T) {
	var m stats.Metrics
	v := reflect.ValueOf(&m).Elem()
	for i, f := range metricFields {
		if f.hist {
			v.FieldByIndex(f.index).Set(reflect.ValueOf(hist(int64(i+1), 1000*int64(i+1))))
		} else {
			v.FieldByIndex(f.index).SetInt(int64(i + 1))
		}
	}
	m.Lost, m.LostOwn, m.ReqResp.Timeouts = 77, 78, 79
	c, err := cellOf(&m)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range derived {
		if _, ok := c.Counters[d]; ok {
			t.Errorf("derived figure %s written", d)
		}
	}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Cell
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	got, err := back.metrics()
	if err != nil {
		t.Fatal(err)
	}
	gv := reflect.ValueOf(&got).Elem()
	for _, f := range metricFields {
		a, b := v.FieldByIndex(f.index), gv.FieldByIndex(f.index)
		if f.hist {
			if !b.Interface().(*hdrhistogram.Histogram).Equals(a.Interface().(*hdrhistogram.Histogram)) {
				t.Errorf("%s: histogram differs after the round trip", f.name)
			}
		} else if a.Int() != b.Int() {
			t.Errorf("%s: %d after the round trip, want %d", f.name, b.Int(), a.Int())
		}
	}
	if got.Lost != 0 || got.LostOwn != 0 || got.ReqResp.Timeouts != 0 {
		t.Errorf("derived figures read back: %d %d %d", got.Lost, got.LostOwn, got.ReqResp.Timeouts)
	}
	if n := len(metricFields); n < 40 {
		t.Errorf("only %d fields of stats.Metrics found: the reflection walk misses some", n)
	}
}

// shardStats is a small run's stats as one shard measured it: group 0
// subscribes, group 1 publishes; sent messages imply expected deliveries
// where the publisher is, received ones are counted where the
// subscriber is.
func shardStats(sent, received int64, lat []int64) *stats.Stats {
	st := &stats.Stats{Started: time.Unix(1000, 0), Elapsed: 5 * time.Second, BrokerURL: "mqtt://127.0.0.1:1883",
		Groups: []stats.GroupInfo{{Name: "sub", Clients: 1, Connected: 1, ConnectedAtEnd: 1}, {Name: "pub", Clients: 1, Connected: 1, ConnectedAtEnd: 1}}}
	st.Phases = make([]stats.PhaseStats, phase.Count)
	for i, p := range phase.All {
		st.Phases[i] = stats.PhaseStats{Phase: p, Start: time.Duration(i) * time.Second, End: time.Duration(i+1) * time.Second, Groups: make([]stats.Metrics, 2)}
	}
	steady := &st.Phases[phase.Steady]
	steady.Groups[0] = stats.Metrics{Expected: sent, Received: received, Latency: hist(lat...)}
	if len(lat) == 0 {
		steady.Groups[0].Latency = nil
	}
	steady.Groups[1] = stats.Metrics{Sent: sent, ExpectedOwn: sent, ReceivedOwn: received}
	stats.FinishPhases(st.Phases, nil)
	st.Timeline = []stats.Second{{At: time.Second, Phase: phase.Steady, Sent: sent, Received: received,
		Groups: []stats.GroupSecond{{Group: "sub", Received: received}, {Group: "pub", Sent: sent}}}}
	return st
}

// part builds shard i of n's partial of st, its second's histogram
// given as a runner would give it.
func part(t *testing.T, st *stats.Stats, i, n int, lat []int64) *File {
	t.Helper()
	c := NewCollector()
	if len(lat) > 0 {
		c.Latency(0, hist(lat...))
	}
	c.Second(st.Timeline[0])
	f, err := FromStats(st, c, Meta{RunID: "r1", Plan: PlanSource{File: "p.yaml", Source: "name: p\n", Groups: []string{"sub", "pub"}}, Shard: Shard{Index: i, Count: n}})
	if err != nil {
		t.Fatal(err)
	}
	return reread(t, f)
}

// reread is f written and read back, as a merge reads a part.
func reread(t *testing.T, f *File) *File {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, f); err != nil {
		t.Fatal(err)
	}
	back, err := Read("part", &b)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// TestMergeRecomputesLoss: a publisher on shard 0 and its subscriber on
// shard 1. Each shard alone would say 10 lost (shard 0: expected 10,
// received 0) and 0 lost (shard 1: expected 0, received 8): the merge
// adds the raw counts and finds the 2 really lost, and its latency
// figures are those of the union of the samples.
func TestMergeRecomputesLoss(t *testing.T) {
	a := part(t, shardStats(10, 0, nil), 0, 2, nil)
	b := part(t, shardStats(0, 8, []int64{100, 200, 300, 400, 500, 600, 700, 80000}), 1, 2, []int64{100, 200, 300, 400, 500, 600, 700, 80000})
	m, err := Merge([]*File{b, a}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := m.Stats
	tot := st.Phases[phase.Steady].Total
	if tot.Expected != 10 || tot.Received != 8 || tot.Lost != 2 || tot.Sent != 10 {
		t.Errorf("merged steady: expected %d received %d lost %d sent %d, want 10 8 2 10", tot.Expected, tot.Received, tot.Lost, tot.Sent)
	}
	if own := st.Phases[phase.Steady].Groups[1]; own.LostOwn != 2 {
		t.Errorf("publisher's lost_own %d, want 2", own.LostOwn)
	}
	if !tot.Latency.Equals(hist(100, 200, 300, 400, 500, 600, 700, 80000)) {
		t.Errorf("merged latency is not the union of the parts'")
	}
	s := st.Timeline[0]
	wantP50, wantP99, wantMax := stats.Quantiles(hist(100, 200, 300, 400, 500, 600, 700, 80000))
	if s.Sent != 10 || s.Received != 8 || s.P50 != wantP50 || s.P99 != wantP99 || s.Max != wantMax || s.Groups[0].P99 != wantP99 {
		t.Errorf("merged second: sent %d received %d p50 %v p99 %v max %v, want 10 8 %v %v %v", s.Sent, s.Received, s.P50, s.P99, s.Max, wantP50, wantP99, wantMax)
	}
	if g := st.Groups[0]; g.Clients != 2 || g.Connected != 2 {
		t.Errorf("group sub: %d clients %d connected, want 2 2", g.Clients, g.Connected)
	}
	if st.Phases[phase.Steady].Start != 4*time.Second || st.Elapsed != 5*time.Second {
		t.Errorf("phase window or elapsed wrong: %v %v", st.Phases[phase.Steady].Start, st.Elapsed)
	}
}

// TestMergeRefuses: parts of different runs are refused (ErrMismatch,
// exit 2), a missing shard is an incomplete run (MissingError, exit 3)
// unless AllowMissing, which reports it incomplete.
func TestMergeRefuses(t *testing.T) {
	st := shardStats(10, 10, []int64{100})
	mk := func(i, n int, edit func(*File)) *File {
		f := part(t, st, i, n, []int64{100})
		if edit != nil {
			edit(f)
		}
		return f
	}
	tests := []struct {
		name    string
		files   []*File
		allow   bool
		want    string // error text; "" for none
		missing bool
	}{
		{"one shard missing", []*File{mk(0, 3, nil), mk(2, 3, nil)}, false, "shard 1 of 3 missing: the expected deliveries of their publishers are unknown, so loss cannot be computed", true},
		{"two missing", []*File{mk(1, 3, nil)}, false, "shards 0, 2 of 3 missing", true},
		{"shard twice", []*File{mk(0, 2, nil), mk(0, 2, nil)}, false, "shard 0 of 2 given twice", false},
		{"another run", []*File{mk(0, 2, nil), mk(1, 2, func(f *File) { f.RunID = "r2" })}, false, `shard 1: run id "r2", not "r1"`, false},
		{"another plan", []*File{mk(0, 2, nil), mk(1, 2, func(f *File) { f.Plan.Source = "name: q\n"; f.PlanSHA256 = f.Plan.Hash() })}, false, "another plan", false},
		{"a forged plan hash", []*File{mk(0, 1, func(f *File) { f.Plan.Source = "name: q\n" })}, false, "another plan", false},
		{"another shard count", []*File{mk(0, 2, nil), mk(1, 3, nil)}, false, "3 shards, not 2", false},
		{"the run id used again", []*File{mk(0, 2, nil), mk(1, 2, func(f *File) { f.Clock.EpochWallNS += int64(time.Minute) })}, false, "another run of it (its common epoch differs", false},
		{"another assignment", []*File{mk(0, 2, nil), mk(1, 2, func(f *File) { f.Shard.AssignSHA256 = "x" })}, false, "another assignment", false},
		{"allow missing", []*File{mk(0, 2, nil)}, true, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Merge(tt.files, Options{AllowMissing: tt.allow})
			var me *MissingError
			switch {
			case tt.want == "":
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(m.Stats.Incomplete, "shard 1 of 2 missing") || len(m.Missing) != 1 {
					t.Errorf("incomplete %q, missing %v: want shard 1 named", m.Stats.Incomplete, m.Missing)
				}
			case err == nil:
				t.Fatalf("merged, want %q", tt.want)
			case !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q, want %q in it", err, tt.want)
			case tt.missing != errors.As(err, &me) || tt.missing == errors.Is(err, ErrMismatch):
				t.Errorf("error %v: missing %v, mismatch %v; want missing %v", err, errors.As(err, &me), errors.Is(err, ErrMismatch), tt.missing)
			}
		})
	}
}

// TestReadRefuses: a file that is not a partial this mqplan can merge is
// refused with a reason, never merged wrongly.
func TestReadRefuses(t *testing.T) {
	var good bytes.Buffer
	f := part(t, shardStats(10, 10, []int64{100}), 0, 1, []int64{100})
	if err := Write(&good, f); err != nil {
		t.Fatal(err)
	}
	wide := hdrhistogram.New(1, 1<<40, 3)
	_ = wide.RecordValue(5)
	wideEnc, _ := wide.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	edit := func(old, new string) string { return strings.Replace(good.String(), old, new, 1) }
	tests := []struct{ name, data, want string }{
		{"not JSON", "hello", "not a partial result"},
		{"a saved report", `{"verdict":"PASS"}`, `no "mqplan_partial" version`},
		{"a newer version", edit(`"mqplan_partial": 1`, `"mqplan_partial": 2`), "version 2, this mqplan reads version 1 only"},
		{"an unknown field", edit(`"run_id"`, `"surprise": 1, "run_id"`), `unknown field "surprise"`},
		{"a shard beyond the count", edit(`"index": 0`, `"index": 5`), "shard 5 of 1"},
		{"a phase missing", edit(`"name": "connect"`, `"name": "konnect"`), `phases[0] is "konnect"`},
		{"an unknown counter", edit(`"Expected"`, `"Expectorated"`), `unknown counter "Expectorated"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Read("x.json", strings.NewReader(tt.data))
			if err == nil {
				_, err = Merge([]*File{f}, Options{})
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q in it", err, tt.want)
			}
		})
	}
	t.Run("a histogram of another geometry", func(t *testing.T) {
		if _, err := decodeHist(string(wideEnc)); err == nil || !strings.Contains(err.Error(), "mqplan's are 1..60000000") {
			t.Errorf("error %v, want the geometry refused", err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		_, err := readLimited("big.json", &zeros{n: 1<<20 + 1}, 1<<20)
		if err == nil || !strings.Contains(err.Error(), "too large") {
			t.Errorf("error %v, want too large", err)
		}
	})
}

// zeros reads n spaces without holding them.
type zeros struct{ n int }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), z.n)
	for i := range p[:k] {
		p[i] = ' '
	}
	z.n -= k
	return k, nil
}

// TestEveryStatsFieldHandled: the partial carries stats.Metrics by
// reflection, and the other types of a run's stats field by field; a
// field added to one of them must be carried (FromStats) and merged
// (Merge) too, or a merged run would silently lack it. This lists the
// fields handled: a new one fails here until it is.
func TestEveryStatsFieldHandled(t *testing.T) {
	handled := map[reflect.Type][]string{
		reflect.TypeFor[stats.Stats](): {"Started", "Elapsed", "BrokerURL", "Phases", "Stages", "Groups", "Timeline", "Broker", "BrokerApart", "Clock",
			"CountersStart", "CountersEnd", "CountersUnchanged", "Interrupted", "Incomplete", "BrokerGone", "ErrorSamples",
			"InFlightAtEnd", "DrainQuiet", "DrainEndRate", "Drain", "Cross", "Notices", "Procs"},
		reflect.TypeFor[stats.Cross](): {"Resent", "ResentCounted", "Fences", "FencesBack", "Monitor", "MonitorMsgs", "MonitorBatch",
			"Mosquitto", "StartRetained", "EndStale"},
		reflect.TypeFor[stats.PhaseStats]():  {"Phase", "Start", "End", "Total", "Groups"},
		reflect.TypeFor[stats.StageStats]():  {"Index", "Name", "Start", "End", "Metrics"},
		reflect.TypeFor[stats.GroupInfo]():   {"Name", "Clients", "Connected", "ConnectedAtEnd", "Lost"},
		reflect.TypeFor[stats.Second]():      {"At", "Phase", "Connected", "Lost", "Sent", "Received", "Errors", "Disconnects", "P50", "P99", "Max", "LagMax", "Groups", "Broker", "Self", "Gen", "Counters"},
		reflect.TypeFor[stats.GroupSecond](): {"Group", "Connected", "Lost", "Sent", "Received", "Errors", "Disconnects", "Acked", "Duplicates", "P50", "P99", "Max", "LagMax"},
		reflect.TypeFor[stats.ProcSample]():  {"Sampled", "CPU", "RSS"},
		reflect.TypeFor[stats.Broker]():      {"MessagesReceived", "MessagesSent", "MessagesDropped", "InflightDropped", "ClientsMaximum"},
		reflect.TypeFor[stats.ShardPair]():   {"From", "To", "Deliveries", "Min"},
		reflect.TypeFor[stats.ShardClock]():  {"Index", "Offset", "Delay", "Drift", "DriftDelay", "DriftKnown", "Source", "SameHost", "NTP", "PairsKnown"},
		reflect.TypeFor[stats.NTP]():         {"Known", "Synced", "MaxError", "EstError"},
	}
	for typ, names := range handled {
		var have []string
		for i := range typ.NumField() {
			have = append(have, typ.Field(i).Name)
		}
		if !slices.Equal(have, names) {
			t.Errorf("stats.%s has fields %v; the partial result handles %v: carry and merge the new ones (partial/from.go, merge.go), then list them here", typ.Name(), have, names)
		}
	}
}
