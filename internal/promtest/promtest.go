// Package promtest starts a private Prometheus server on 127.0.0.1, its
// remote-write receiver enabled, for tests of what mqplan pushes, and
// queries it. Tests skip, saying why, when prometheus is not installed,
// except in CI (CI set in the environment), where it must be: .ci/run
// installs Debian's prometheus package.
package promtest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/loopback"
	"github.com/mqplan/mqplan/internal/wait"
)

// Binary returns the prometheus executable, or "" when it is not
// installed.
func Binary() string {
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p
	}
	return ""
}

// Server is a running Prometheus.
type Server struct {
	// URL is its base URL (http://127.0.0.1:PORT); WriteURL its
	// remote-write receiver.
	URL, WriteURL string
	logs          string
}

// Start runs Prometheus (2.33 or later: --web.enable-remote-write-receiver)
// with an empty configuration, no scrape of its own and a temporary
// storage directory, until the test ends, and waits until it is ready.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("prometheus is not installed, but CI must run the remote-write test: .ci/run installs it")
		}
		t.Skip("prometheus is not installed (apt-get install prometheus); skipping the remote-write test")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(conf, []byte("global: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(loopback.FreePort(t))
	cmd := exec.Command(bin, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--web.enable-remote-write-receiver", "--log.level=warn")
	// A file, not a buffer: Logs may read it while Prometheus writes.
	logs, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	s := &Server{URL: "http://" + addr, WriteURL: "http://" + addr + "/api/v1/write", logs: logs.Name()}
	// Prometheus replays its (empty) WAL before it is ready: a second or
	// two on a loaded machine.
	wait.UntilWithin(t, 30*time.Second, 50*time.Millisecond, "prometheus to be ready on "+addr, func() bool {
		select {
		case <-exited:
			t.Fatalf("prometheus exited before it was ready:\n%s", s.Logs())
		default:
		}
		resp, err := http.Get(s.URL + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return s
}

// Sample is one series of an instant query's answer.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query runs the instant query q (PromQL) now and returns its vector.
func (s *Server) Query(t testing.TB, q string) []Sample {
	t.Helper()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	s.get(t, "/api/v1/query?query="+url.QueryEscape(q), &r)
	if r.Status != "success" || r.Data.ResultType != "vector" {
		t.Fatalf("query %s: status %q, %s, result %q", q, r.Status, r.Error, r.Data.ResultType)
	}
	var out []Sample
	for _, x := range r.Data.Result {
		str, _ := x.Value[1].(string)
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			t.Fatalf("query %s: value %v: %v", q, x.Value[1], err)
		}
		out = append(out, Sample{Labels: x.Metric, Value: v})
	}
	return out
}

// LabelValues is label's values over the series that match selector,
// as Grafana's label_values(selector, label) asks them.
func (s *Server) LabelValues(t testing.TB, label, selector string) []string {
	t.Helper()
	var r struct {
		Status string   `json:"status"`
		Data   []string `json:"data"`
	}
	s.get(t, "/api/v1/label/"+url.PathEscape(label)+"/values?match[]="+url.QueryEscape(selector), &r)
	if r.Status != "success" {
		t.Fatalf("label values of %s over %s: status %q", label, selector, r.Status)
	}
	return r.Data
}

// get GETs path of the HTTP API and decodes its JSON answer into v.
func (s *Server) get(t testing.TB, path string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %s: %v\n%s", path, resp.Status, err, body)
	}
}

// Logs is what Prometheus has written so far, for a failing test's
// message.
func (s *Server) Logs() string {
	b, err := os.ReadFile(s.logs)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
