package exposition

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/brokerstat"
)

// TestParse: EMQX's exposition gives the counters; a body that
// is not an exposition, one too large, and one with none of the names
// are errors that say so.
func TestParse(t *testing.T) {
	emqx, err := os.ReadFile("../../testdata/brokerstat/emqx5-stats.prom")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		body    string
		limit   int64
		want    map[brokerstat.Counter]int64
		wantErr error  // errors.Is
		errText string // or a part of the message
	}{
		{name: "emqx 5", body: string(emqx), limit: 1 << 20, want: map[brokerstat.Counter]int64{
			brokerstat.Clients: 4, brokerstat.PublishReceived: 15012, brokerstat.PublishSent: 15003, brokerstat.Dropped: 9, brokerstat.Subscriptions: 2, brokerstat.MemoryBytes: 72925416 + 31598744}},
		{name: "openmetrics _total names and node labels", limit: 1 << 20, body: "# TYPE emqx_messages_received_total counter\n" +
			"emqx_messages_received_total{node=\"a\"} 3\nemqx_messages_received_total{node=\"b\"} 4\n" +
			"process_resident_memory_bytes 1000\n",
			want: map[brokerstat.Counter]int64{brokerstat.PublishReceived: 7, brokerstat.MemoryBytes: 1000}},
		{name: "negative value unusable", limit: 1 << 20, body: "emqx_messages_sent -1\nemqx_connections_count 2\n",
			want: map[brokerstat.Counter]int64{brokerstat.Clients: 2}},
		{name: "every value unusable: named", limit: 1 << 20, body: "emqx_messages_sent NaN\nemqx_connections_count -2\nemqx_messages_received +Inf\n",
			errText: "the exposition's broker counters are unusable: the values of emqx_connections_count, emqx_messages_received, emqx_messages_sent are not finite non-negative numbers (NaN, Inf or negative)"},
		{name: "html", limit: 1 << 20, body: "<html><body>login</body></html>\n", errText: "not a Prometheus text exposition"},
		{name: "too large", limit: 100, body: string(emqx), wantErr: ErrTooLarge},
		{name: "no known counter", limit: 1 << 20, body: "go_goroutines 12\n", wantErr: ErrNoCounters},
		{name: "empty", limit: 1 << 20, body: "", wantErr: ErrNoCounters},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.body), tt.limit)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			case tt.errText != "":
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errText)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			var want brokerstat.Counters
			for c, v := range tt.want {
				want.Put(c, v)
			}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

// FuzzParse: no body makes the parser panic or read past its
// limit, and a counter it reports is never negative.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("../../testdata/brokerstat/emqx5-stats.prom"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("emqx_messages_sent{node=\"a\"} 1e3\n"))
	f.Add([]byte("# TYPE x histogram\nx_bucket{le=\"1\"} 1\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		const limit = 4096
		r := &countingReader{b: body}
		cs, err := Parse(r, limit)
		if r.n > limit+1 {
			t.Fatalf("read %d bytes past the limit %d", r.n, limit)
		}
		if err != nil {
			return
		}
		for c := range brokerstat.NumCounters {
			if v, ok := cs.Get(c); ok && v < 0 {
				t.Fatalf("%s = %d", c, v)
			}
		}
	})
}

// countingReader counts what was read of b.
type countingReader struct {
	b []byte
	n int
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.n >= len(r.b) {
		return 0, errEOF
	}
	k := copy(p, r.b[r.n:])
	r.n += k
	return k, nil
}

var errEOF = io.EOF
