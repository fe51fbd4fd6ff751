package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
)

// maxPushURL bounds the --metrics-push URL.
const maxPushURL = 2048

// pushTimeout bounds one remote write, so that a receiver that hangs
// cannot hold up the end of a run for longer.
const pushTimeout = 10 * time.Second

// Pusher sends an exporter's metrics to a Prometheus remote-write
// endpoint (the protocol's version 1: a snappy-compressed protobuf
// WriteRequest), as a Prometheus server's own remote_write does: what a
// CI runner behind NAT, or a run shorter than the scrape interval, needs
// to land in Prometheus whole. Every sample of one push carries the same
// timestamp, the push's; series get job="mqplan" and the host name as
// instance, which a scrape would have added.
type Pusher struct {
	gather prometheus.Gatherer
	// url has no user information: user and pass go in a basic
	// Authorization header, never in a message.
	url        string
	user, pass string
	auth       bool
	// shown is the URL as messages name it (its secrets masked).
	shown    string
	instance string
	client   *http.Client
	// mu serialises pushes, so that timestamps reach the receiver in order.
	mu sync.Mutex
	// last is the last push's timestamp (ms): the next is later, even
	// within the same millisecond, since Prometheus refuses a second
	// value at the same timestamp (a final push right after one at the
	// interval would fail).
	last int64
	// now is the clock (time.Now; a test's fixed one).
	now func() time.Time
}

// NewPusher returns a pusher of x's metrics to the remote-write endpoint
// raw (http or https; user:password@ in it become basic authentication).
// shown is raw with its secrets masked (plans.RedactURL), the only form
// messages and errors name.
func NewPusher(raw, shown string, x *Exporter) (*Pusher, error) {
	if len(raw) > maxPushURL {
		return nil, fmt.Errorf("URL of %d bytes, at most %d", len(raw), maxPushURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the URL whole, password and all.
		return nil, fmt.Errorf("%s is not a URL", shown)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("%s: want an http:// or https:// URL of a Prometheus remote-write receiver, e.g. http://127.0.0.1:9090/api/v1/write", shown)
	}
	p := &Pusher{gather: x.registry(), shown: shown, instance: "mqplan", client: &http.Client{Timeout: pushTimeout}, now: time.Now}
	if u.User != nil {
		p.user = u.User.Username()
		p.pass, _ = u.User.Password()
		p.auth = true
		u.User = nil
	}
	p.url = u.String()
	if h, err := os.Hostname(); err == nil && h != "" {
		p.instance = h
	}
	return p, nil
}

// URL is the endpoint as messages name it, its secrets masked.
func (p *Pusher) URL() string { return p.shown }

// Push sends the exporter's current state, once.
func (p *Pusher) Push(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	fams, err := p.gather.Gather()
	if err != nil {
		return fmt.Errorf("push to %s: gather the metrics: %w", p.shown, err)
	}
	p.last = max(p.now().UnixMilli(), p.last+1)
	body := snappy.Encode(nil, writeRequest(fams, p.last, p.instance))
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("push to %s: %w", p.shown, err)
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	req.Header.Set("User-Agent", "mqplan")
	if p.auth {
		req.SetBasicAuth(p.user, p.pass)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		// A *url.Error names the request's URL: say the masked one.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("push to %s: %w", p.shown, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("push to %s: %s: %s", p.shown, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// Every pushes every interval until ctx ends, and gives warn the first
// failure and each one that follows a success (not every failure of a
// receiver that is down). It returns when ctx ends.
func (p *Pusher) Every(ctx context.Context, interval time.Duration, warn func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := p.Push(ctx)
		if err != nil && !failing && ctx.Err() == nil {
			warn(err)
		}
		failing = err != nil
	}
}

// writeRequest encodes fams as a remote-write WriteRequest (prompb):
// every sample at ts (ms), each series with job="mqplan", instance and
// its own labels; a histogram as its classic series (_bucket with le,
// _sum, _count), which every Prometheus version takes.
//
//	WriteRequest { repeated TimeSeries timeseries = 1; }
//	TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//	Label        { string name = 1; string value = 2; }
//	Sample       { double value = 1; int64 timestamp = 2; }
func writeRequest(fams []*dto.MetricFamily, ts int64, instance string) []byte {
	var out []byte
	series := func(name string, labels []*dto.LabelPair, extra []string, v float64) {
		ls := [][2]string{{"__name__", name}, {"job", "mqplan"}, {"instance", instance}}
		for _, l := range labels {
			ls = append(ls, [2]string{l.GetName(), l.GetValue()})
		}
		for i := 0; i+1 < len(extra); i += 2 {
			ls = append(ls, [2]string{extra[i], extra[i+1]})
		}
		// The receiver wants labels sorted by name.
		slices.SortFunc(ls, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
		var s []byte
		for _, l := range ls {
			var lb []byte
			lb = protowire.AppendTag(lb, 1, protowire.BytesType)
			lb = protowire.AppendString(lb, l[0])
			lb = protowire.AppendTag(lb, 2, protowire.BytesType)
			lb = protowire.AppendString(lb, l[1])
			s = protowire.AppendTag(s, 1, protowire.BytesType)
			s = protowire.AppendBytes(s, lb)
		}
		var sb []byte
		sb = protowire.AppendTag(sb, 1, protowire.Fixed64Type)
		sb = protowire.AppendFixed64(sb, math.Float64bits(v))
		sb = protowire.AppendTag(sb, 2, protowire.VarintType)
		sb = protowire.AppendVarint(sb, uint64(ts))
		s = protowire.AppendTag(s, 2, protowire.BytesType)
		s = protowire.AppendBytes(s, sb)
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, s)
	}
	for _, f := range fams {
		name := f.GetName()
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				series(name, m.GetLabel(), nil, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				series(name, m.GetLabel(), nil, m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				inf := false
				for _, b := range h.GetBucket() {
					le := b.GetUpperBound()
					inf = inf || math.IsInf(le, 1)
					series(name+"_bucket", m.GetLabel(), []string{"le", strconv.FormatFloat(le, 'g', -1, 64)}, float64(b.GetCumulativeCount()))
				}
				if !inf {
					series(name+"_bucket", m.GetLabel(), []string{"le", "+Inf"}, float64(h.GetSampleCount()))
				}
				series(name+"_sum", m.GetLabel(), nil, h.GetSampleSum())
				series(name+"_count", m.GetLabel(), nil, float64(h.GetSampleCount()))
			}
		}
	}
	return out
}
