package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/brokerstat/exposition"
	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// This file samples the broker's own counters (broker.metrics sys and
// prometheus): a $SYS monitor connection and a Prometheus scraper, each on
// goroutines of its own that hand their latest reading over through an
// atomic pointer, so that neither ever blocks the snapshot goroutine or a
// client. The monitor is not one of the plan's clients: nothing it does is
// counted in the plan's figures.

const (
	// sysBatchGap separates the broker's $SYS updates: a broker publishes
	// one update's topics at once, so a message after this much silence
	// starts the next update.
	sysBatchGap = 100 * time.Millisecond
	// sysStartWait bounds the wait for a first live $SYS update before the
	// first publish (Mosquitto's sys_interval 1 updates every second or
	// two); past it the retained copies the subscription brought serve.
	sysStartWait = 3 * time.Second
	// sysEndWait, plus the broker's update interval, bounds the wait for
	// the update that follows the drain.
	sysEndWait = 2 * time.Second
	// maxSysInterval caps the update interval that wait allows for, and
	// is the interval assumed while it is unknown: Mosquitto 2.0's default
	// sys_interval 10 updates every 11 s (it publishes once more than
	// sys_interval seconds passed), so a run against a default Mosquitto
	// waits at most 13 s for its figures at the end.
	maxSysInterval = 11 * time.Second
	// scrapeTimeout bounds one scrape, under the one-second interval.
	scrapeTimeout = 900 * time.Millisecond
	// maxScrapeNotes bounds the distinct scrape errors the report lists.
	maxScrapeNotes = 3
)

// maxExposition bounds a scraped body (a variable for tests).
var maxExposition int64 = 8 << 20

// sysView is the $SYS monitor's state as of its last message.
type sysView struct {
	counters brokerstat.Counters
	// msgs counts every message the monitor received (retained ones
	// included); batchMsgs those received before the latest update began;
	// sentMsgs those the broker's PUBLISH-sent figure in counters already
	// counts: a broker counts the PUBLISH packets it writes, the monitor's
	// included, up to the moment it takes the figure. Mosquitto takes it
	// as it publishes its topic (so the update's messages before it are
	// in), mochi when the update begins, and the retained copies a new
	// subscription gets were all written after their figures were taken.
	// The monitor's own share of the broker's PUBLISH-sent between two
	// readings is the difference of their sentMsgs.
	msgs, batchMsgs, sentMsgs int64
	// batchStart and last are when the latest update began and when its
	// last message arrived; interval the broker's update interval (0 until
	// known): the difference of two successive $SYS/broker/uptime
	// readings, else the time between the starts of the last two live
	// updates.
	batchStart, last time.Time
	interval         time.Duration
	// upInterval: interval comes from the uptime readings.
	upInterval bool
	// live: the latest update holds a message that was not a retained
	// copy, so it is an update the broker published while the monitor
	// listened (a retained copy's figures may predate messages the
	// broker then wrote to other subscribers).
	live bool
	// mosquitto: the broker showed itself as Mosquitto, which publishes a
	// counter only when it changed (brokerstat.Sys.Mosquitto).
	mosquitto bool
}

// complete reports whether the latest update has ended (nothing came for
// sysBatchGap) at now.
func (v *sysView) complete(now time.Time) bool { return now.Sub(v.last) >= sysBatchGap }

// sysMonitor is the $SYS connection. Its fields other than view and
// notify belong to the connection's reader goroutine.
type sysMonitor struct {
	conn *mqttc.Conn
	sys  brokerstat.Sys
	cur  sysView
	view atomic.Pointer[sysView]
	// notify wakes a wait for an update (capacity 1, never blocks).
	notify chan struct{}
	// closing: the run closes the connection on purpose.
	closing atomic.Bool
}

// message is the monitor's delivery handler (reader goroutine).
func (m *sysMonitor) message(topic, payload []byte, retained bool) {
	now := time.Now()
	up0, hadUp := m.sys.Uptime()
	c, known := m.sys.Message(string(topic), payload)
	v := m.cur
	if up, ok := m.sys.Uptime(); ok && hadUp && !retained && up > up0 {
		// Successive updates: the retained uptime the subscription
		// brought is the update before the first live one.
		v.interval, v.upInterval = time.Duration(up-up0)*time.Second, true
	}
	if v.msgs == 0 || now.Sub(v.last) > sysBatchGap {
		if !v.batchStart.IsZero() && v.live && !retained && !v.upInterval {
			v.interval = now.Sub(v.batchStart)
		}
		v.batchStart, v.batchMsgs, v.live = now, v.msgs, false
	}
	v.live = v.live || !retained
	if known && c == brokerstat.PublishSent {
		v.sentMsgs = v.batchMsgs
		if !retained && m.sys.TakenPerTopic() {
			v.sentMsgs = v.msgs
		}
	}
	v.msgs++
	v.last = now
	v.counters = m.sys.Counters()
	v.mosquitto = m.sys.Mosquitto()
	m.cur = v
	m.view.Store(&v)
	select {
	case m.notify <- struct{}{}:
	default:
	}
}

// await waits until the monitor holds a complete live update that began
// after `after`, until deadline. It returns the last view (nil when none)
// and whether it is such an update.
func (m *sysMonitor) await(after, deadline time.Time) (*sysView, bool) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		v := m.view.Load()
		fresh := v != nil && v.live && v.batchStart.After(after)
		if fresh && v.complete(now) {
			return v, true
		}
		if !now.Before(deadline) {
			return v, false
		}
		wait := deadline.Sub(now)
		if fresh {
			wait = min(wait, v.last.Add(sysBatchGap).Sub(now))
		}
		timer.Reset(max(wait, time.Millisecond))
		select {
		case <-m.notify:
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
		case <-m.conn.Done():
			return m.view.Load(), false
		}
	}
}

// scraper scrapes the broker's Prometheus endpoint once a second.
type scraper struct {
	url    string
	client *http.Client
	latest atomic.Pointer[brokerstat.Counters]
	stop   chan struct{}
	done   chan struct{}
}

// scrape reads the endpoint once, within scrapeTimeout. Its errors never
// hold the URL's credentials.
func (s *scraper) scrape(ctx context.Context) (brokerstat.Counters, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return brokerstat.Counters{}, errors.New("not a usable URL")
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		return brokerstat.Counters{}, errors.New(plans.RedactURL(cleanErr(unwrapURLError(err)).Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return brokerstat.Counters{}, fmt.Errorf("HTTP %s", resp.Status)
	}
	cs, err := exposition.Parse(resp.Body, maxExposition)
	if err != nil && ctx.Err() != nil {
		return cs, errors.New("timed out")
	}
	return cs, err
}

// unwrapURLError drops net/http's "Get \"URL\": " wrapping, which would
// show the URL again.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// counterSources are the run's sources of the broker's own counters.
type counterSources struct {
	mon    *sysMonitor
	scrape *scraper
	// monPub and scrapePub publish mon and scrape to the snapshot
	// goroutine, which runs before they start (once the plan's clients
	// have connected).
	monPub    atomic.Pointer[sysMonitor]
	scrapePub atomic.Pointer[scraper]
	// scrapeNotes are the distinct scrape errors already noted.
	scrapeNotes []string
	// start and end are the monitor's views at the run's start and end.
	start, end *sysView
	// endStale: the end is not a $SYS update after the drain; staleWhy
	// says why, for warnings.
	endStale bool
	staleWhy string
	// unchanged are the cumulative counters known unchanged over the run
	// though in neither reading (stats.Stats.CountersUnchanged).
	unchanged []brokerstat.Counter
}

// startCounters connects the $SYS monitor and starts the scraper, as the
// plan's broker.metrics asks. A monitor that cannot connect or subscribe
// is a notice: the run goes on without $SYS figures.
//
// In a sharded run only shard 0 watches the broker, as one process
// would: every shard's monitor would be one more client and one more
// receiver of $SYS to the broker's own counters (broker.clients.max,
// broker.publish.sent), and the merge takes the counters of one part.
func (r *run) startCounters(ctx context.Context, m *plans.BrokerMetrics, t mqttc.Target) {
	if m == nil || (r.sh.shard != nil && r.sh.shard.Index != 0) {
		return
	}
	if m.Prometheus != "" {
		s := &scraper{url: m.Prometheus, client: &http.Client{Timeout: scrapeTimeout},
			stop: make(chan struct{}), done: make(chan struct{})}
		r.counters.scrape = s
		r.counters.scrapePub.Store(s)
		go r.scrapeLoop(s)
	}
	if !m.Sys {
		return
	}
	mon := &sysMonitor{notify: make(chan struct{}, 1)}
	opts := mqttc.Options{ClientID: monitorID(), CleanStart: true, Timeout: r.timeout, Version: mqttc.Version311}
	if len(r.prog.Clients) > 0 {
		// The credentials and protocol of the plan's first client: the
		// broker lets them in (MQTT 5 allows a password without a user
		// name, 3.1.1 does not), and an ACL that allows them $SYS is the
		// user's to set.
		pc := &r.prog.Clients[0]
		if v := r.prog.Plan.Groups[pc.Group].Protocol; v != 0 {
			opts.Version = byte(v)
		}
		opts.Username = pc.Username
		if pw := pc.Password.Reveal(); pw != "" {
			opts.Password = []byte(pw)
		}
	}
	h := mqttc.Handlers{Message: mon.message, Closed: func(err error) {
		if err != nil && !mon.closing.Load() { // nil: stopCounters disconnected it
			r.note(plans.RedactURL(fmt.Sprintf("broker.metrics.sys: the $SYS monitor's connection was lost at %s (%v): the broker's counters stop there", r.at().Round(time.Second), cleanErr(err))))
		}
	}}
	conn, err := mqttc.Dial(ctx, t, opts, r.now, h)
	if err != nil {
		r.note(plans.RedactURL(fmt.Sprintf("broker.metrics.sys: the $SYS monitor could not connect (%v; a broker at its connection limit, such as Mosquitto's max_connections, closes it the same way): the broker's $SYS counters are not in this report", cleanErr(err))))
		return
	}
	mon.conn = conn
	sctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	codes, err := conn.Subscribe(sctx, []mqttc.Subscription{{Filter: "$SYS/#"}})
	if err == nil && len(codes) == 1 && codes[0].Failed() {
		err = fmt.Errorf("the broker refused it: %s", codes[0])
	}
	if err != nil {
		mon.closing.Store(true)
		conn.Close()
		r.note(plans.RedactURL(fmt.Sprintf("broker.metrics.sys: the $SYS monitor could not subscribe to $SYS/# (%v): the broker's $SYS counters are not in this report", cleanErr(err))))
		return
	}
	r.counters.mon = mon
	r.counters.monPub.Store(mon)
}

// monitorID is the monitor's client id: its own, never a plan client's.
func monitorID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "mqplan-sys-" + hex.EncodeToString(b[:])
}

// scrapeLoop scrapes once a second until stopped (its own goroutine).
func (r *run) scrapeLoop(s *scraper) {
	defer close(s.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-s.stop; cancel() }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		cs, err := s.scrape(ctx)
		if err == nil {
			s.latest.Store(&cs)
		} else if ctx.Err() == nil {
			r.noteScrape(err)
		}
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
	}
}

// noteScrape notes a scrape error once per kind, a few kinds at most.
func (r *run) noteScrape(err error) {
	msg := err.Error()
	r.notesMu.Lock()
	defer r.notesMu.Unlock()
	for _, n := range r.counters.scrapeNotes {
		if n == msg {
			return
		}
	}
	if len(r.counters.scrapeNotes) >= maxScrapeNotes {
		return
	}
	r.counters.scrapeNotes = append(r.counters.scrapeNotes, msg)
	r.notes = append(r.notes, fmt.Sprintf("broker.metrics.prometheus: a scrape of %s failed at %s: %s", plans.RedactEndpoint(r.counters.scrape.url), r.at().Round(time.Second), msg))
}

// sampleCounters puts the latest counters into s (snapshot goroutine:
// two atomic loads, never a wait).
func (r *run) sampleCounters(s *stats.Second) {
	if v := r.counters.monPub.Load().load(); v != nil {
		s.Counters = v.counters
	}
	if sc := r.counters.scrapePub.Load(); sc != nil {
		if p := sc.latest.Load(); p != nil {
			s.Counters.Fill(*p)
		}
	}
}

// load is the monitor's latest view (nil without a monitor or a message).
func (m *sysMonitor) load() *sysView {
	if m == nil {
		return nil
	}
	return m.view.Load()
}

// captureCounters reads the counters at the run's start (before the
// first publish: end false) or end (after the drain: end true). $SYS
// waits for a complete update (at the end, one that began after the
// drain, bounded by sysEndWait plus the broker's update interval, or
// maxSysInterval while that is unknown); Prometheus is scraped once more.
// An end reading that no live $SYS update followed gives no cumulative
// $SYS counter: its change would miss what the broker did not publish yet.
func (r *run) captureCounters(end, interrupted bool) brokerstat.Counters {
	var cs brokerstat.Counters
	var sysEnd brokerstat.Counters
	if mon := r.counters.mon; mon != nil && interrupted {
		// A user who pressed Ctrl-C wants the report now: the last update.
		if v := mon.load(); v != nil {
			cs = v.counters
		}
		sysEnd = cs
		r.counters.endStale = true
		r.counters.staleWhy = "the run was interrupted before the broker's update after the drain"
	} else if mon != nil {
		now := time.Now()
		var v *sysView
		var ok bool
		if !end {
			// A live update, when one comes soon; else the retained copies,
			// once complete.
			if v, ok = mon.await(time.Time{}, now.Add(sysStartWait)); !ok && v != nil && !v.complete(time.Now()) {
				v = nil
			}
			r.counters.start = v
			if v == nil {
				r.note(fmt.Sprintf("broker.metrics.sys: no $SYS update arrived within %s of subscribing: the broker's counters at the start are missing, so their changes over the run are absent (thresholds on them fail with no samples)", sysStartWait))
			}
		} else {
			wait, known := sysEndWait+maxSysInterval, false
			if last := mon.load(); last != nil && last.interval > 0 {
				wait, known = sysEndWait+min(last.interval, maxSysInterval), true
			}
			if r.counters.start == nil {
				// Nothing at the start to take a change from: no long wait.
				wait = sysEndWait + time.Second
			}
			v, ok = mon.await(now, now.Add(wait))
			r.counters.end, r.counters.endStale = v, !ok
			if !ok {
				select {
				case <-mon.conn.Done():
					r.counters.staleWhy = "the $SYS monitor's connection was lost before the broker's update after the drain"
				default:
					every := "its update interval is unknown; set sys_interval 1 in mosquitto.conf for an update every second or two"
					if known {
						every = fmt.Sprintf("it updates every %s", mon.load().interval.Round(time.Millisecond))
						if mon.load().interval > 2*time.Second {
							every += "; set sys_interval 1 in mosquitto.conf for an update every second or two"
						}
					}
					r.counters.staleWhy = fmt.Sprintf("the broker published no live $SYS update within %s after the drain (%s)", wait.Round(time.Millisecond), every)
				}
			}
		}
		if v != nil {
			cs = v.counters
			sysEnd = cs
		}
	}
	if sc := r.counters.scrape; sc != nil && !interrupted {
		p, err := sc.scrape(context.Background())
		if err != nil {
			r.noteScrape(err)
		} else {
			cs.Fill(p)
		}
	}
	if end && r.counters.mon != nil {
		r.settleEnd(&cs, sysEnd)
	}
	return cs
}

// settleEnd makes the end reading's cumulative $SYS counters sound (end
// is the reading, sysEnd its $SYS part): a stale end gives none (their
// change would miss what the broker had not published yet); a counter
// Mosquitto never published between the monitor's subscribing and its
// live update after the drain did not change (CountersUnchanged), as long
// as another of its publish/messages topics came (an ACL may hide some);
// any cumulative counter whose change ends up absent gets a warning that
// says why.
func (r *run) settleEnd(end *brokerstat.Counters, sysEnd brokerstat.Counters) {
	start := r.countersStart
	// The monitor reads Mosquitto's publish/messages topics (an ACL may
	// allow it only part of $SYS): one of them came.
	readsPublish := false
	for _, c := range []brokerstat.Counter{brokerstat.PublishReceived, brokerstat.PublishSent, brokerstat.Dropped} {
		_, ok := sysEnd.Get(c)
		readsPublish = readsPublish || ok
	}
	var dropped, expired, never []string
	r.counters.unchanged = nil
	for c := range brokerstat.NumCounters {
		if !c.Cumulative() {
			continue
		}
		_, inStart := start.Get(c)
		_, inEnd := end.Get(c)
		_, fromSys := sysEnd.Get(c)
		switch {
		case r.counters.endStale:
			if fromSys {
				end.Drop(c)
			}
			if _, ok := end.Get(c); !ok || !inStart {
				dropped = append(dropped, c.String())
			}
		case inStart && inEnd:
		case !inStart && !inEnd && !r.counters.endStale && r.counters.start != nil && r.counters.end != nil && r.counters.end.mosquitto && readsPublish:
			// Mosquitto publishes a counter at an update only when it
			// changed: none came from the subscription to the live update
			// after the drain, so it did not change.
			r.counters.unchanged = append(r.counters.unchanged, c)
		case !inStart && inEnd:
			expired = append(expired, c.String())
		default:
			never = append(never, c.String())
		}
	}
	if len(dropped) > 0 {
		r.note(fmt.Sprintf("broker.metrics.sys: %s: the broker's %s at the end would miss what it had not published yet, so their changes over the run are absent (thresholds on them fail with no samples)", r.counters.staleWhy, strings.Join(dropped, ", ")))
	}
	if len(expired) > 0 {
		r.note(fmt.Sprintf("broker.metrics.sys: the broker's %s at the start is unknown (no retained copy came with the subscription: Mosquitto's expire 60 s after their last change, whatever its sys_interval, and it republishes a figure only when it changes) and it changed during the run, so its change over the run is absent (thresholds on it fail with no samples): a broker idle for more than a minute before the run has this, so let traffic through it shortly before the run (a warm-up run) if you judge its PUBLISH counters", strings.Join(expired, ", ")))
	}
	if len(never) > 0 && r.counters.start != nil {
		r.note(fmt.Sprintf("broker.metrics.sys: no change over the run for the broker's %s: the broker never published it while the monitor listened, and only Mosquitto is known to publish a counter only when it changed (thresholds on it fail with no samples)", strings.Join(never, ", ")))
	}
}

// stopCounters closes the monitor and stops the scraper.
func (r *run) stopCounters() {
	if mon := r.counters.mon; mon != nil {
		mon.closing.Store(true)
		mon.conn.Disconnect()
		<-mon.conn.ReaderDone()
	}
	if sc := r.counters.scrape; sc != nil {
		close(sc.stop)
		<-sc.done
	}
}
