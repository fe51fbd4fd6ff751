// Package browsertest opens a page in headless Chromium for tests and
// reports what a user's browser would have shown: console errors, uncaught
// exceptions, network requests, values the page computed, and a
// screenshot. It speaks the DevTools protocol over the pipe Chromium opens
// with --remote-debugging-pipe (file descriptors 3 and 4, messages
// separated by NUL bytes), so it needs no port, no WebSocket and no
// dependency. Tests skip, saying why, when Chromium is not installed,
// except in CI (CI set in the environment), where it must be: .ci/run
// installs it. Tests only import it.
package browsertest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	neturl "net/url"

	"github.com/mqplan/mqplan/internal/wait"
)

// Timeout bounds every exchange with the browser: a loaded CI machine
// starts Chromium in a few seconds; a hung one fails the test with what it
// was waiting for.
const Timeout = 60 * time.Second

// maxMessage bounds one protocol message (a full-page screenshot is the
// largest, a few MB in base64).
const maxMessage = 64 << 20

// Binary returns the Chromium executable, or "" when none is installed.
func Binary() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Page is what loading one page produced.
type Page struct {
	// Errors are the console errors, uncaught exceptions and browser log
	// errors, one line each; a sound page has none.
	Errors []string
	// Warnings are console and browser warnings, for the test's log.
	Warnings []string
	// Requests are the URLs the page asked for beyond itself.
	Requests []string
	// Value is the JSON the page's script returned (see Open).
	Value json.RawMessage
	// Screenshot is a PNG of the whole page.
	Screenshot []byte
}

// Open loads the file at path in headless Chromium with a viewport width
// wide, waits for its load event and then for the JavaScript expression
// ready to be true, evaluates value (an expression whose result is
// returned as JSON), and takes a screenshot of the whole page. It skips
// the test when Chromium is missing outside CI.
func Open(t testing.TB, path string, width int, ready, value string) *Page {
	t.Helper()
	bin := Binary()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed, but CI must run the browser tests: .ci/run installs it")
		}
		t.Skip("chromium is not installed (apt-get install chromium); skipping the browser test")
	}
	s := start(t, bin)
	defer s.close()

	target, err := s.call("", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		t.Fatalf("creating a page: %v", err)
	}
	var tid struct{ TargetID string }
	if err := json.Unmarshal(target, &tid); err != nil || tid.TargetID == "" {
		t.Fatalf("creating a page: no target id in %s (%v)", target, err)
	}
	att, err := s.call("", "Target.attachToTarget", map[string]any{"targetId": tid.TargetID, "flatten": true})
	if err != nil {
		t.Fatalf("attaching to the page: %v", err)
	}
	var sid struct{ SessionID string }
	if err := json.Unmarshal(att, &sid); err != nil || sid.SessionID == "" {
		t.Fatalf("attaching to the page: no session id in %s (%v)", att, err)
	}
	session := sid.SessionID

	for _, m := range []string{"Runtime.enable", "Log.enable", "Network.enable", "Page.enable"} {
		if _, err := s.call(session, m, nil); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
	}
	if _, err := s.call(session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": false}); err != nil {
		t.Fatalf("setting the viewport: %v", err)
	}
	url := (&neturl.URL{Scheme: "file", Path: path}).String()
	s.mu.Lock()
	s.self = url
	s.mu.Unlock()
	if _, err := s.call(session, "Page.navigate", map[string]any{"url": url}); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
	if err := s.await("Page.loadEventFired"); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
	var readyErr error
	wait.Until(t, "the page to be ready ("+ready+")", func() bool {
		v, err := s.eval(session, "Boolean("+ready+")")
		readyErr = err
		return err != nil || string(v) == "true"
	})
	if readyErr != nil {
		t.Fatalf("evaluating %s: %v", ready, readyErr)
	}
	p := &Page{}
	if p.Value, err = s.eval(session, "JSON.stringify("+value+")"); err != nil {
		t.Fatalf("evaluating %s: %v", value, err)
	}
	var str string
	if json.Unmarshal(p.Value, &str) == nil {
		p.Value = json.RawMessage(str)
	}

	// The whole page: the viewport grown to the content's height.
	lm, err := s.call(session, "Page.getLayoutMetrics", nil)
	if err != nil {
		t.Fatalf("measuring the page: %v", err)
	}
	var metrics struct {
		CSSContentSize struct{ Height float64 } `json:"cssContentSize"`
	}
	if err := json.Unmarshal(lm, &metrics); err != nil {
		t.Fatalf("measuring the page: %s: %v", lm, err)
	}
	h := int(metrics.CSSContentSize.Height)
	if h < 100 || h > 30000 {
		h = 3000
	}
	if _, err := s.call(session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": width, "height": h, "deviceScaleFactor": 1, "mobile": false}); err != nil {
		t.Fatalf("growing the viewport: %v", err)
	}
	shot, err := s.call(session, "Page.captureScreenshot", map[string]any{"format": "png"})
	if err != nil {
		t.Fatalf("taking the screenshot: %v", err)
	}
	var data struct{ Data string }
	if err := json.Unmarshal(shot, &data); err != nil {
		t.Fatalf("taking the screenshot: %v", err)
	}
	if p.Screenshot, err = base64.StdEncoding.DecodeString(data.Data); err != nil {
		t.Fatalf("decoding the screenshot: %v", err)
	}

	s.mu.Lock()
	p.Errors, p.Warnings, p.Requests = s.errors, s.warnings, s.requests
	s.mu.Unlock()
	return p
}

// session is one running browser and its protocol pipe.
type session struct {
	t   testing.TB
	cmd *exec.Cmd
	in  io.WriteCloser
	out *os.File

	mu       sync.Mutex
	nextID   int
	pending  map[int]chan reply
	events   chan string
	errors   []string
	warnings []string
	requests []string
	self     string
	done     chan struct{}
	stderr   lockedBuffer
}

// lockedBuffer is the browser's standard error, written by exec's copier
// while a failing call reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 { // enough to say why it failed
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type reply struct {
	result json.RawMessage
	err    error
}

func start(t testing.TB, bin string) *session {
	t.Helper()
	cmdR, cmdW, err := os.Pipe() // what the browser reads: fd 3
	if err != nil {
		t.Fatal(err)
	}
	resR, resW, err := os.Pipe() // what it writes: fd 4
	if err != nil {
		t.Fatal(err)
	}
	profile := t.TempDir()
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
		"--user-data-dir="+profile, "--no-first-run", "--no-default-browser-check", "--hide-scrollbars",
		"--disable-extensions", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, resW}
	s := &session{t: t, cmd: cmd, in: cmdW, out: resR, pending: map[int]chan reply{},
		events: make(chan string, 4096), done: make(chan struct{})}
	cmd.Stderr = &s.stderr
	// Helpers that outlive the browser keep its stderr open: Wait stops
	// waiting for them after this.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	cmdR.Close()
	resW.Close()
	go s.read()
	return s
}

// close asks the browser to quit, as a user closing it would, so that
// its helper processes end with it; it is killed if it does not.
func (s *session) close() {
	s.call("", "Browser.close", nil)
	s.in.Close()
	exited := make(chan struct{})
	go func() {
		s.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(Timeout):
		s.cmd.Process.Kill()
		<-exited
	}
	s.out.Close()
	<-s.done
}

// read dispatches the browser's messages: replies to their callers,
// events into the page's record.
func (s *session) read() {
	defer close(s.done)
	r := bufio.NewReaderSize(s.out, 1<<16)
	for {
		msg, err := r.ReadBytes(0)
		if err != nil {
			s.mu.Lock()
			for id, ch := range s.pending {
				ch <- reply{err: fmt.Errorf("the browser closed its pipe (%v); its stderr:\n%s", err, s.stderr.String())}
				delete(s.pending, id)
			}
			s.mu.Unlock()
			return
		}
		if len(msg) > maxMessage {
			continue
		}
		var m struct {
			ID     int             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(bytes.TrimSuffix(msg, []byte{0}), &m); err != nil {
			continue
		}
		if m.ID != 0 {
			s.mu.Lock()
			ch := s.pending[m.ID]
			delete(s.pending, m.ID)
			s.mu.Unlock()
			if ch != nil {
				rep := reply{result: m.Result}
				if m.Error != nil {
					rep.err = fmt.Errorf("%s", m.Error.Message)
				}
				ch <- rep
			}
			continue
		}
		s.record(m.Method, m.Params)
		select {
		case s.events <- m.Method:
		default:
		}
	}
}

// record keeps what a user would have seen go wrong.
func (s *session) record(method string, params json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch method {
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string `json:"type"`
			Args []struct {
				Value       any    `json:"value"`
				Description string `json:"description"`
			} `json:"args"`
		}
		json.Unmarshal(params, &p)
		var parts []string
		for _, a := range p.Args {
			if a.Value != nil {
				parts = append(parts, fmt.Sprint(a.Value))
			} else {
				parts = append(parts, a.Description)
			}
		}
		line := "console." + p.Type + ": " + strings.Join(parts, " ")
		switch p.Type {
		case "error", "assert":
			s.errors = append(s.errors, line)
		case "warning":
			s.warnings = append(s.warnings, line)
		}
	case "Runtime.exceptionThrown":
		var p struct {
			ExceptionDetails struct {
				Text      string `json:"text"`
				Line      int    `json:"lineNumber"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		json.Unmarshal(params, &p)
		d := p.ExceptionDetails
		s.errors = append(s.errors, fmt.Sprintf("uncaught (line %d): %s %s", d.Line+1, d.Text, d.Exception.Description))
	case "Log.entryAdded":
		var p struct {
			Entry struct {
				Level  string `json:"level"`
				Source string `json:"source"`
				Text   string `json:"text"`
				URL    string `json:"url"`
			} `json:"entry"`
		}
		json.Unmarshal(params, &p)
		line := fmt.Sprintf("%s %s: %s %s", p.Entry.Source, p.Entry.Level, p.Entry.Text, p.Entry.URL)
		switch p.Entry.Level {
		case "error":
			s.errors = append(s.errors, line)
		case "warning":
			s.warnings = append(s.warnings, line)
		}
	case "Network.requestWillBeSent":
		var p struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
		}
		json.Unmarshal(params, &p)
		if u := p.Request.URL; u != s.self && u != "about:blank" {
			s.requests = append(s.requests, u)
		}
	}
}

// call sends one command (to the browser, or to a page's session) and
// waits for its reply.
func (s *session) call(sessionID, method string, params any) (json.RawMessage, error) {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	ch := make(chan reply, 1)
	s.pending[id] = ch
	s.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	if _, err := s.in.Write(append(b, 0)); err != nil {
		return nil, fmt.Errorf("writing to the browser: %w", err)
	}
	select {
	case r := <-ch:
		return r.result, r.err
	case <-s.done:
		// The reader failed the calls pending when it ended; this one
		// may have come after.
		select {
		case r := <-ch:
			return r.result, r.err
		default:
			return nil, fmt.Errorf("the browser ended before replying to %s; its stderr:\n%s", method, s.stderr.String())
		}
	case <-time.After(Timeout):
		return nil, fmt.Errorf("no reply to %s in %v", method, Timeout)
	}
}

// await waits for the event method.
func (s *session) await(method string) error {
	deadline := time.After(Timeout)
	for {
		select {
		case m := <-s.events:
			if m == method {
				return nil
			}
		case <-s.done:
			return fmt.Errorf("the browser ended before %s; its stderr:\n%s", method, s.stderr.String())
		case <-deadline:
			return fmt.Errorf("no %s in %v", method, Timeout)
		}
	}
}

// eval evaluates a JavaScript expression in the page and returns its
// value as JSON; an exception is an error.
func (s *session) eval(sessionID, expr string) (json.RawMessage, error) {
	res, err := s.call(sessionID, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	if err != nil {
		return nil, err
	}
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, err
	}
	if r.ExceptionDetails != nil {
		return nil, fmt.Errorf("%s", r.ExceptionDetails.Text)
	}
	return r.Result.Value, nil
}

// SaveScreenshot writes p's screenshot to $TMPDIR/mqplan-screenshots/NAME.png,
// a fixed place where people and CI artefacts find it, and logs the path.
func SaveScreenshot(t testing.TB, p *Page, name string) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "mqplan-screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, p.Screenshot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return path
}

// ChartsState is the JavaScript expression that reads what the HTML
// report's script records (see report.WriteHTML): the page's error count,
// the number of charts drawn, and for each element of class "chart" its
// data-drawn, data-series and data-series-pixels. Give it to Open as
// value and the Page to CheckCharts.
const ChartsState = `({
  errors: document.body.dataset.errors || "",
  chartsDrawn: document.body.dataset.chartsDrawn || "",
  charts: Array.from(document.querySelectorAll(".chart")).map(function (e) {
    return {id: e.id, drawn: e.dataset.drawn || "", series: e.dataset.series || "", seriesPixels: e.dataset.seriesPixels || ""};
  })
})`

// ChartsReady is the expression that holds once the report's script has
// run to its end.
const ChartsReady = "document.body.dataset.chartsDrawn !== undefined"

// CheckCharts checks the page's record against want, the number of series
// with data each chart must have drawn, by element id; a chart wanted with
// 0 series must show its "no data" note instead (data-drawn="empty"). Each
// series drawn must have painted pixels of its colour, and the page must
// have counted no script error. Charts not in want are errors.
func CheckCharts(t *testing.T, p *Page, want map[string]int) {
	t.Helper()
	var st struct {
		Errors, ChartsDrawn string
		Charts              []struct{ ID, Drawn, Series, SeriesPixels string }
	}
	if err := json.Unmarshal(p.Value, &st); err != nil {
		t.Fatalf("the page's chart record %s: %v", p.Value, err)
	}
	if st.Errors != "0" {
		t.Errorf("the page counted %q script errors", st.Errors)
	}
	drawn := 0
	for _, n := range want {
		if n > 0 {
			drawn++
		}
	}
	if st.ChartsDrawn != strconv.Itoa(drawn) || len(st.Charts) != len(want) {
		t.Errorf("%s charts drawn of %d chart elements, want %d of %d", st.ChartsDrawn, len(st.Charts), drawn, len(want))
	}
	for _, c := range st.Charts {
		t.Run(c.ID, func(t *testing.T) {
			n, ok := want[c.ID]
			switch {
			case !ok:
				t.Fatalf("unexpected chart")
			case n == 0:
				if c.Drawn != "empty" || c.Series != "0" {
					t.Errorf("data-drawn=%q data-series=%q, want the no-data note", c.Drawn, c.Series)
				}
				return
			case c.Drawn != "true":
				t.Fatalf("not drawn (data-drawn=%q)", c.Drawn)
			}
			if c.Series != strconv.Itoa(n) {
				t.Errorf("%s series with data, want %d", c.Series, n)
			}
			parts := strings.Split(c.SeriesPixels, ";")
			if len(parts) < n {
				t.Errorf("pixels recorded for %q, want %d series", c.SeriesPixels, n)
			}
			for _, part := range parts {
				i := strings.LastIndexByte(part, '=')
				if px, err := strconv.Atoi(part[i+1:]); i < 0 || err != nil || px <= 0 {
					t.Errorf("series %q painted no pixel", part)
				}
			}
		})
	}
}

// CheckSeries checks that the chart with element id drew exactly the
// series labels, in order (read from its data-series-pixels, which
// CheckCharts checks painted pixels): a count alone would pass a chart
// that drew the wrong process or group.
func CheckSeries(t *testing.T, p *Page, id string, labels ...string) {
	t.Helper()
	var st struct {
		Charts []struct{ ID, SeriesPixels string }
	}
	if err := json.Unmarshal(p.Value, &st); err != nil {
		t.Fatalf("the page's chart record %s: %v", p.Value, err)
	}
	for _, c := range st.Charts {
		if c.ID != id {
			continue
		}
		var got []string
		for _, part := range strings.Split(c.SeriesPixels, ";") {
			if i := strings.LastIndexByte(part, '='); i >= 0 {
				got = append(got, part[:i])
			}
		}
		if strings.Join(got, "|") != strings.Join(labels, "|") {
			t.Errorf("chart %s drew the series %q, want %q", id, got, labels)
		}
		return
	}
	t.Errorf("no chart %s in the page", id)
}
