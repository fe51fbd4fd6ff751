package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/mqplan/mqplan/live"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/report"
	"github.com/mqplan/mqplan/stats"
)

// Bounds of --metrics-push-interval: a push a second is the live
// metrics' own pace; ten minutes is the longest a run's figures may wait.
const (
	minPushInterval = time.Second
	maxPushInterval = 10 * time.Minute
)

// liveInfo is what the live metrics say of the run: its id (the one its
// default client ids carry), its plan file, its broker URL with the
// secrets masked, this mqplan, and its thresholds' expressions.
func liveInfo(prog *plans.Program, path, runID string) live.Info {
	info := live.Info{RunID: runID, Plan: path, Broker: plans.RedactURL(strings.Join(prog.Plan.Broker.URLs, ","))}
	info.Version, info.Revision = versionParts()
	for _, th := range prog.Thresholds {
		info.Thresholds = append(info.Thresholds, th.Source.Expr)
	}
	return info
}

// versionParts is this binary's version and VCS revision ("" when the
// build does not say it), for mqplan_build_info.
func versionParts() (ver, rev string) {
	info, ok := debug.ReadBuildInfo()
	ver, _, _ = strings.Cut(strings.TrimPrefix(versionLine(info, ok, version), "mqplan "), " ")
	if ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				rev = s.Value
			}
		}
	}
	return ver, rev
}

// liveFinal is what the live metrics learn when the run is over: each
// group's unsent messages and payload bytes over all phases, the connect latency and the
// thresholds' outcomes.
func liveFinal(st *stats.Stats, res *report.Result) live.Final {
	var f live.Final
	n := len(st.Groups)
	f.Unsent, f.SentBytes, f.ReceivedBytes = make([]int64, n), make([]int64, n), make([]int64, n)
	for _, ph := range st.Phases {
		for g := range ph.Groups {
			if g < n {
				m := &ph.Groups[g]
				f.Unsent[g] += m.Unsent
				f.SentBytes[g] += m.SentBytes
				f.ReceivedBytes[g] += m.ReceivedBytes
			}
		}
	}
	for _, row := range res.Latency {
		if row.Name == "connect" && row.Samples > 0 {
			f.ConnectP50, f.ConnectP99, f.ConnectMax = row.P50, row.P99, row.Max
		}
	}
	for _, t := range res.Thresholds {
		f.Thresholds = append(f.Thresholds, live.Threshold{Expr: t.Expr, Pass: t.Pass})
	}
	return f
}

// metricsPush pushes the live metrics to a remote-write receiver while
// the run goes and once at its end.
type metricsPush struct {
	p      *live.Pusher
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startPush checks --metrics-push and its interval and starts pushing x
// every interval; nil without a URL.
func startPush(e *env, x *live.Exporter, url string, interval time.Duration) (*metricsPush, error) {
	if url == "" {
		return nil, nil
	}
	if interval < minPushInterval || interval > maxPushInterval {
		return nil, invalid(fmt.Errorf("--metrics-push-interval %v: from %v to %v", interval, minPushInterval, maxPushInterval))
	}
	p, err := live.NewPusher(url, plans.RedactURL(url), x)
	if err != nil {
		return nil, invalid(fmt.Errorf("--metrics-push: %w", err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	mp := &metricsPush{p: p, cancel: cancel}
	mp.wg.Add(1)
	go func() {
		defer mp.wg.Done()
		p.Every(ctx, interval, func(err error) {
			fmt.Fprintf(e.stderr, "mqplan: warning: --metrics-push: %s\n", errText(err))
		})
	}()
	return mp, nil
}

// stop ends the pushes at the interval, waiting for one in progress.
func (mp *metricsPush) stop() {
	if mp == nil {
		return
	}
	mp.cancel()
	mp.wg.Wait()
}

// final stops the pushes at the interval and pushes the final figures
// once: the run's outputs include them, so a failure is the run's.
func (mp *metricsPush) final() error {
	if mp == nil {
		return nil
	}
	mp.stop()
	if err := mp.p.Push(context.Background()); err != nil {
		return fmt.Errorf("--metrics-push: %w", err)
	}
	return nil
}
