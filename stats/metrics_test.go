package stats

import (
	"reflect"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// TestMergeAddsEveryField checks that Merge adds every count and merges
// every histogram, so that a field added to Metrics and forgotten in Merge
// fails here rather than vanishing from merged phases (and, later, from
// merged shards).
func TestMergeAddsEveryField(t *testing.T) {
	a, b := filled(1), filled(10)
	a.Merge(&b)
	v := reflect.ValueOf(a)
	for i := 0; i < v.NumField(); i++ {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch {
		case name == "FirstReceived":
			// The delivery window merges as the union: the earlier first…
			if want := int64(1 * (i + 1)); f.Int() != want {
				t.Errorf("%s = %d after merge, want the earlier %d", name, f.Int(), want)
			}
			continue
		case name == "LastReceived":
			// …and the later last.
			if want := int64(10 * (i + 1)); f.Int() != want {
				t.Errorf("%s = %d after merge, want the later %d", name, f.Int(), want)
			}
			continue
		}
		switch f.Kind() {
		case reflect.Int64:
			if want := int64(11 * (i + 1)); f.Int() != want {
				t.Errorf("%s = %d after merge, want %d", name, f.Int(), want)
			}
		case reflect.Struct:
			checkMergedFields(t, name, f)
		case reflect.Pointer:
			h := f.Interface().(*hdrhistogram.Histogram)
			if h.TotalCount() != 2 || h.Max() < 1000 {
				t.Errorf("%s: %d samples (max %d) after merge, want both sides' 2", name, h.TotalCount(), h.Max())
			}
		default:
			t.Errorf("%s: field of kind %s that this test (and Merge?) does not know", name, f.Kind())
		}
	}
}

// TestMergeNil checks the nil cases: merging nil is a no-op, and a nil
// histogram on either side neither panics nor is shared.
func TestMergeNil(t *testing.T) {
	var m Metrics
	m.Merge(nil)
	o := Metrics{Sent: 3, Latency: NewHistogram()}
	_ = o.Latency.RecordValue(7)
	m.Merge(&o)
	if m.Sent != 3 || m.Latency == nil || m.Latency == o.Latency || m.Latency.TotalCount() != 1 {
		t.Errorf("merge into zero Metrics: sent %d, latency %p (source %p)", m.Sent, m.Latency, o.Latency)
	}
	if m.Ack != nil {
		t.Error("a histogram neither side has was allocated")
	}
}

// TestMergeReceiveWindow checks the delivery window's merge: a side
// without deliveries leaves the other's window as it is, whichever side
// it is on, and two windows merge into the span of both.
func TestMergeReceiveWindow(t *testing.T) {
	s := time.Second
	tests := []struct {
		name             string
		a, b             Metrics
		first, last, win time.Duration
	}{
		{name: "none and none", first: 0, last: 0, win: 0},
		{name: "none into some", a: Metrics{FirstReceived: 2 * s, LastReceived: 5 * s}, first: 2 * s, last: 5 * s, win: 3 * s},
		{name: "some into none", b: Metrics{FirstReceived: 2 * s, LastReceived: 5 * s}, first: 2 * s, last: 5 * s, win: 3 * s},
		{name: "disjoint", a: Metrics{FirstReceived: 7 * s, LastReceived: 9 * s}, b: Metrics{FirstReceived: 2 * s, LastReceived: 3 * s}, first: 2 * s, last: 9 * s, win: 7 * s},
		{name: "nested", a: Metrics{FirstReceived: 1 * s, LastReceived: 9 * s}, b: Metrics{FirstReceived: 2 * s, LastReceived: 3 * s}, first: 1 * s, last: 9 * s, win: 8 * s},
		{name: "one delivery", b: Metrics{FirstReceived: 4 * s, LastReceived: 4 * s}, first: 4 * s, last: 4 * s, win: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.a
			m.Merge(&tt.b)
			if m.FirstReceived != tt.first || m.LastReceived != tt.last || m.ReceiveWindow() != tt.win {
				t.Errorf("merged window %v..%v (%v), want %v..%v (%v)", m.FirstReceived, m.LastReceived, m.ReceiveWindow(), tt.first, tt.last, tt.win)
			}
		})
	}
}

// filled returns Metrics whose i-th count is k×(i+1) and whose histograms
// hold one sample each (k µs and 1000k µs alternately on the two sides).
func filled(k int64) Metrics {
	var m Metrics
	fill(reflect.ValueOf(&m).Elem(), k)
	return m
}

// fill sets every int64 of struct v to k × its position and every
// histogram to one sample of k × 100, nested structs (Metrics.ReqResp)
// included.
func fill(v reflect.Value, k int64) {
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int64:
			f.SetInt(k * int64(i+1))
		case reflect.Pointer:
			h := NewHistogram()
			_ = h.RecordValue(k * 100)
			f.Set(reflect.ValueOf(h))
		case reflect.Struct:
			fill(f, k)
		}
	}
}

// checkMergedFields checks a nested struct merged from fill(1) and
// fill(10): every int64 the sum, every histogram both samples.
func checkMergedFields(t *testing.T, outer string, v reflect.Value) {
	t.Helper()
	for i := 0; i < v.NumField(); i++ {
		f, name := v.Field(i), outer+"."+v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.Int64:
			if want := int64(11 * (i + 1)); f.Int() != want {
				t.Errorf("%s = %d after merge, want %d", name, f.Int(), want)
			}
		case reflect.Pointer:
			if h := f.Interface().(*hdrhistogram.Histogram); h.TotalCount() != 2 {
				t.Errorf("%s: %d samples after merge, want 2", name, h.TotalCount())
			}
		default:
			t.Errorf("%s: field of kind %s that this test (and Merge?) does not know", name, f.Kind())
		}
	}
}
