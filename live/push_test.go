package live

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/mqplan/mqplan/internal/promtest"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestPushToPrometheus: what a push sends lands in a real Prometheus
// (its remote-write receiver) with the exporter's values and labels, the
// histograms as their classic series.
func TestPushToPrometheus(t *testing.T) {
	prom := promtest.Start(t)
	x := finishedExporter(t)
	p, err := NewPusher(prom.WriteURL, prom.WriteURL, x)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 3 {
		if err := p.Push(ctx); err != nil {
			t.Fatalf("push %d: %v\n%s", i, err, prom.Logs())
		}
		if i < 2 {
			// A value that changes between pushes, as the final one's
			// do after the last at the interval.
			x.Observe(stats.Second{Phase: phase.Drain, Groups: []stats.GroupSecond{{Group: "pub"}, {Group: "sub"}}})
		}
	}
	tests := []struct {
		name, query string
		want        float64
	}{
		{"counter", `mqplan_messages_sent_total{run_id="r-1",group="pub",job="mqplan"}`, 10},
		{"gauge", `mqplan_clients_connected{run_id="r-1",group="sub"}`, 0},
		{"phase", `mqplan_phase{run_id="r-1",phase="drain"}`, 1},
		{"histogram count", `mqplan_e2e_latency_seconds_count{run_id="r-1",group="sub"}`, 3},
		{"histogram bucket", `mqplan_e2e_latency_seconds_bucket{run_id="r-1",group="sub",le="0.0025"}`, 3},
		{"histogram +Inf", `mqplan_e2e_latency_seconds_bucket{run_id="r-1",group="sub",le="+Inf"}`, 3},
		{"unsent", `mqplan_messages_unsent{run_id="r-1",group="pub"}`, 4},
		{"threshold", `mqplan_threshold_passed{run_id="r-1",threshold="lost == 0"}`, 0},
		{"run info", `mqplan_run_info{run_id="r-1",plan="plans/p.yaml"}`, 1},
		{"quantile from the pushed buckets", `histogram_quantile(0.5, mqplan_e2e_latency_seconds_bucket{run_id="r-1",group="sub"})`, 0.00175},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := prom.Query(t, tt.query)
			if len(got) != 1 || got[0].Value != tt.want {
				t.Errorf("%s = %+v, want one series of %v", tt.query, got, tt.want)
			}
		})
	}
}

// TestPushCredentials: user:password@ in the URL becomes basic
// authentication, and no message names the password; a refusal says the
// receiver's status.
func TestPushCredentials(t *testing.T) {
	var auth, encoding string
	var decoded bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		auth, encoding = u+":"+p, r.Header.Get("Content-Encoding")
		body, _ := io.ReadAll(r.Body)
		_, err := snappy.Decode(nil, body)
		decoded = err == nil
		http.Error(w, "no such tenant", http.StatusUnauthorized)
	}))
	defer srv.Close()
	raw := strings.Replace(srv.URL, "http://", "http://bob:s3cret@", 1) + "/api/v1/write"
	shown := strings.Replace(raw, "s3cret", "***", 1)
	p, err := NewPusher(raw, shown, finishedExporter(t))
	if err != nil {
		t.Fatal(err)
	}
	err = p.Push(context.Background())
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), shown) {
		t.Errorf("push error %v: want the 401, the masked URL %s and no password", err, shown)
	}
	if auth != "bob:s3cret" || encoding != "snappy" || !decoded {
		t.Errorf("receiver saw basic auth %q, encoding %q, snappy body %v", auth, encoding, decoded)
	}
	for _, bad := range []string{"ftp://h/x", "http://", "http://bob:s3cret@%zz"} {
		if _, err := NewPusher(bad, "MASKED", finishedExporter(t)); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("NewPusher(%q): %v, want an error without the password", bad, err)
		}
	}
}

// FuzzNewPusher: any URL is taken or refused without a panic; a refusal
// names the URL only by the masked form it is given, so never a password.
func FuzzNewPusher(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:9090/api/v1/write", "https://u:p4ss@h/x?token=t", "ftp://u:p4ss@x", "http://u:p4ss@%zz", "", "http://[::1"} {
		f.Add(s)
	}
	x := New([]string{"g"}, Info{RunID: "fuzz"})
	f.Fuzz(func(t *testing.T, raw string) {
		_, err := NewPusher(raw, "MASKED", x)
		if err == nil {
			return
		}
		// Every refusal is one of these texts, whatever the URL: none
		// can carry any of it.
		switch msg := err.Error(); {
		case msg == "MASKED is not a URL",
			msg == "MASKED: want an http:// or https:// URL of a Prometheus remote-write receiver, e.g. http://127.0.0.1:9090/api/v1/write",
			msg == fmt.Sprintf("URL of %d bytes, at most %d", len(raw), maxPushURL):
		default:
			t.Errorf("NewPusher(%q): %v: a refusal that depends on the URL", raw, err)
		}
	})
}

// TestPushTimestampsIncrease: pushes within one millisecond, as a final
// push right after one at the interval, each carry a later timestamp
// than the last, since Prometheus refuses a changed value at a timestamp
// it has.
func TestPushTimestampsIncrease(t *testing.T) {
	var mu sync.Mutex
	var stamps []int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, err := snappy.Decode(nil, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		stamps = append(stamps, firstTimestamp(t, req))
		mu.Unlock()
	}))
	defer srv.Close()
	p, err := NewPusher(srv.URL, srv.URL, finishedExporter(t))
	if err != nil {
		t.Fatal(err)
	}
	// A clock that stands still: every push in the same millisecond.
	at := time.Now()
	p.now = func() time.Time { return at }
	for range 3 {
		if err := p.Push(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []int64{at.UnixMilli(), at.UnixMilli() + 1, at.UnixMilli() + 2}; !slices.Equal(stamps, want) {
		t.Errorf("push timestamps %v, want %v", stamps, want)
	}
}

// firstTimestamp decodes a WriteRequest's first series' first sample's
// timestamp (ms).
func firstTimestamp(t *testing.T, b []byte) int64 {
	t.Helper()
	// field returns the first length-delimited field num of msg.
	field := func(msg []byte, num protowire.Number) []byte {
		for len(msg) > 0 {
			n, typ, l := protowire.ConsumeTag(msg)
			if l < 0 {
				t.Fatalf("bad tag: %v", protowire.ParseError(l))
			}
			msg = msg[l:]
			if n == num && typ == protowire.BytesType {
				v, _ := protowire.ConsumeBytes(msg)
				return v
			}
			l = protowire.ConsumeFieldValue(n, typ, msg)
			if l < 0 {
				t.Fatalf("bad field: %v", protowire.ParseError(l))
			}
			msg = msg[l:]
		}
		t.Fatalf("no field %d", num)
		return nil
	}
	sample := field(field(b, 1), 2)
	for len(sample) > 0 {
		n, typ, l := protowire.ConsumeTag(sample)
		if l < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(l))
		}
		sample = sample[l:]
		if n == 2 && typ == protowire.VarintType {
			v, _ := protowire.ConsumeVarint(sample)
			return int64(v)
		}
		sample = sample[protowire.ConsumeFieldValue(n, typ, sample):]
	}
	t.Fatal("no timestamp")
	return 0
}
