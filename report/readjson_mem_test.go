package report

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// bigResult is a valid result with a long timeline of many groups, the
// shape of a long soak's file.
func bigResult(t testing.TB, seconds, groups int) *Result {
	r := *goldenCases(t.(*testing.T))[0].r
	// The timeline's groups are the plan's.
	pl := *r.Plan
	pl.Groups = make([]plans.Group, groups)
	for g := range pl.Groups {
		pl.Groups[g] = r.Plan.Groups[g%len(r.Plan.Groups)]
		pl.Groups[g].Name = "group-" + strconv.Itoa(g)
	}
	r.Plan = &pl
	r.Timeline = make([]stats.Second, seconds)
	for i := range r.Timeline {
		s := &r.Timeline[i]
		s.At, s.Phase = time.Duration(i+1)*time.Second, r.Phases[len(r.Phases)-1].Phase
		s.Groups = make([]stats.GroupSecond, groups)
		for g := range s.Groups {
			s.Groups[g] = stats.GroupSecond{Group: "group-" + strconv.Itoa(g), Connected: 100, Sent: 1000 + int64(i%7), Received: 999,
				Acked: 1000, P50: 1100 * time.Microsecond, P99: 2300 * time.Microsecond, Max: 5 * time.Millisecond, LagMax: time.Millisecond}
			s.Sent += s.Groups[g].Sent
			s.Received += s.Groups[g].Received
			s.Connected += 100
		}
		s.P50, s.P99, s.Max = 1100*time.Microsecond, 2300*time.Microsecond, 5*time.Millisecond
		s.Broker = stats.ProcSample{Sampled: true, CPU: 42.5, RSS: 300 << 20}
		s.Self = stats.ProcSample{Sampled: true, CPU: 80, RSS: 100 << 20}
	}
	r.Elapsed = time.Duration(seconds+1) * time.Second
	return &r
}

// writeBig writes bigResult to a file and returns its path and size.
func writeBig(t *testing.T, seconds, groups int) (string, int64) {
	path := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if err := WriteJSON(w, bigResult(t, seconds, groups)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, fi.Size()
}

// peakHeap runs fn and returns the largest live heap seen while it ran,
// above the heap before it, sampled every millisecond.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak uint64
	var mu sync.Mutex
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			mu.Lock()
			peak = max(peak, s[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(stop)
	<-done
	if peak < base {
		return 0
	}
	return peak - base
}

// TestReadJSONMemory: reading a long result back takes memory of the
// order of the result it gives, not several copies of the file. The size
// is MQPLAN_TEST_BIG_SECONDS seconds of 20 groups (2,000 by default, about
// 16 MB; 100 MB is 12,000 seconds).
func TestReadJSONMemory(t *testing.T) {
	seconds := 2000
	if s := os.Getenv("MQPLAN_TEST_BIG_SECONDS"); s != "" {
		var err error
		if seconds, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	path, size := writeBig(t, seconds, 20)
	var res *Result
	peak := peakHeap(func() {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if res, err = ReadJSON(f); err != nil {
			t.Fatal(err)
		}
	})
	runtime.KeepAlive(res)
	t.Logf("file %.1f MB, peak heap while reading %.1f MB (%.1f× the file)", float64(size)/1e6, float64(peak)/1e6, float64(peak)/float64(size))
	if peak > 3*uint64(size) {
		t.Errorf("reading a %d-byte result took %d bytes of heap at its peak; want at most 3× the file", size, peak)
	}
}
