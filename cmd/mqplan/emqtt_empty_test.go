package main

import (
	"bufio"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/natstest"
)

// A sub that received nothing fails (the built-in check received > 0)
// unless --allow-empty, and says why it most likely heard nothing: a
// $share/... filter on a broker without shared subscriptions, or a broker
// that closes the connection on a shared SUBSCRIBE.

const (
	// emptyCheckFailed is the verdict of a sub that received nothing.
	emptyCheckFailed = "FAIL: built-in check failed: received > 0 (received=0)"
	// shareHint is the notice of a $share/g/bench/# that heard nothing.
	shareHint = `shared subscription "$share/g/bench/#" received nothing: the broker may not support shared subscriptions (NATS, RabbitMQ and aedes take $share/... as a literal topic)`
)

// TestEmqttSubReceivedNothing runs subs with nobody publishing against
// mqplan broker: each fails with a message naming what heard nothing,
// unless --allow-empty says nothing is a pass.
func TestEmqttSubReceivedNothing(t *testing.T) {
	t.Parallel()
	u := startEmqttBroker(t, 1)[0]
	base := []string{"sub", "-h", u.Hostname(), "-p", u.Port(), "-c", "2", "-i", "0", "--duration", "1s"}
	tests := []struct {
		name    string
		args    []string
		code    int
		want    []string
		notWant []string
	}{
		{"a plain filter: fails, naming the filter", []string{"-t", "nobody/#"}, exitFail,
			[]string{emptyCheckFailed, `group sub received nothing on "nobody/#": nothing was published to a matching topic while it listened`},
			[]string{"shared subscription"}},
		{"a shared filter: fails with the $share hint", []string{"-t", "$share/g/bench/#"}, exitFail,
			[]string{emptyCheckFailed, shareHint}, []string{"group sub received nothing on"}},
		{"--allow-empty: passes on nothing, still saying so", []string{"-t", "nobody/#", "--allow-empty"}, exitPass,
			[]string{"PASS: 1 of 1 threshold held", `group sub received nothing on "nobody/#"`}, []string{"built-in check failed"}},
		{"a threshold of its own on received decides", []string{"-t", "nobody/#", "--threshold", "received < 5"}, exitPass,
			[]string{"PASS: 1 of 1 threshold held"}, []string{"built-in check failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each mostly waits for its --duration
			r := runCmd(t, append(append([]string{}, base...), tt.args...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, s := range tt.want {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
			for _, s := range tt.notWant {
				if strings.Contains(r.stdout, s) {
					t.Errorf("stdout has %q:\n%s", s, r.stdout)
				}
			}
		})
	}
}

// TestEmqttSubShare runs `mqplan sub -t '$share/g/bench/#'` beside
// `mqplan pub -t 'bench/%i'`: the embedded broker shares the messages
// out and the sub passes; NATS takes $share/g/bench/# for a literal topic
// nobody publishes to, and the sub fails saying so instead of passing on
// nothing.
func TestEmqttSubShare(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		url  func(t *testing.T) *url.URL
		code int
		want []string
		not  []string
	}{
		{"mqplan broker: shared, received, passes", func(t *testing.T) *url.URL { return startEmqttBroker(t, 1)[0] }, exitPass,
			[]string{"PASS"}, []string{shareHint, "built-in check failed"}},
		{"NATS: a literal topic, received nothing, fails with the hint", func(t *testing.T) *url.URL {
			u, err := url.Parse(natstest.Start(t))
			if err != nil {
				t.Fatal(err)
			}
			return u
		}, exitFail, []string{emptyCheckFailed, shareHint}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := tt.url(t)
			code, out, pubSent := subBesidePub(t, u, "$share/g/bench/#", "bench/%i")
			if pubSent == 0 {
				t.Fatalf("the pub sent nothing: the test proves nothing\n%s", out)
			}
			if code != tt.code {
				t.Fatalf("sub exit %d, want %d\n%s", code, tt.code, out)
			}
			for _, s := range tt.want {
				if !strings.Contains(out, s) {
					t.Errorf("sub's output lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(out, s) {
					t.Errorf("sub's output has %q:\n%s", s, out)
				}
			}
		})
	}
}

// subBesidePub runs a sub on filter for 4s, and once its clients are
// subscribed a pub on topic (2 clients, one message each every 100 ms for
// 1s), both on MQTT 3.1.1 (which NATS speaks), as a user would in two
// terminals. It returns the sub's exit code and output, and what the
// pub sent.
func subBesidePub(t *testing.T, u *url.URL, filter, topic string) (code int, out string, pubSent int) {
	t.Helper()
	host, port := u.Hostname(), u.Port()
	sub := startCmd(t, "sub", "-V", "4", "-h", host, "-p", port, "-t", filter, "-c", "2", "-i", "0", "--duration", "4s")
	// The reads below end when the command does; make sure they do.
	killer := time.AfterFunc(30*time.Second, sub.kill)
	defer killer.Stop()
	var subErr strings.Builder
	sc := bufio.NewScanner(sub.stderr)
	for sc.Scan() {
		subErr.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "2 of 2 clients connected and subscribed") {
			break
		}
	}
	errDone := make(chan struct{})
	go func() {
		for sc.Scan() {
			subErr.WriteString(sc.Text() + "\n")
		}
		close(errDone)
	}()
	pub := runCmd(t, "pub", "-V", "4", "-h", host, "-p", port, "-t", topic, "-c", "2", "-I", "100", "--duration", "1s")
	if pub.code != exitPass {
		t.Errorf("pub exit %d\n%s\n%s", pub.code, pub.stdout, pub.stderr)
	}
	stdout, _ := io.ReadAll(sub.stdout)
	<-errDone
	code = sub.wait(t, 20*time.Second)
	return code, string(stdout) + subErr.String(), max(lastTotal(pub.stdout, "sent"), 0)
}

// TestEmqttSubShareClosed stands in for ejabberd, which refuses a shared
// subscription on MQTT 3.1.1 by closing the connection right after
// SUBSCRIBE, with no SUBACK: no ejabberd runs here, so a raw TCP listener
// that answers CONNECT with CONNACK and closes on SUBSCRIBE plays it. The
// error names the shared subscription as the likely cause and says what
// to try; a plain filter closed the same way does not get that hint.
func TestEmqttSubShareClosed(t *testing.T) {
	t.Parallel()
	addr := closeOnSubscribe(t)
	host, port, _ := net.SplitHostPort(addr)
	const hint = "the broker closed the connection on SUBSCRIBE $share/g/bench/#: it may not accept shared subscriptions on MQTT 3.1.1; try -V 5"
	for _, tt := range []struct {
		name, filter string
		want         bool
	}{
		{"shared: named as the likely cause", "$share/g/bench/#", true},
		{"plain: no hint", "bench/#", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runCmd(t, "sub", "-V", "4", "-h", host, "-p", port, "-t", tt.filter, "-c", "1", "--duration", "2s")
			if r.code != exitIncomplete {
				t.Fatalf("exit %d, want 3 (no client could subscribe)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			// On the verdict line, which says why no client subscribed,
			// and under Errors.
			verdict := ""
			for _, l := range strings.Split(r.stdout, "\n") {
				if strings.HasPrefix(l, "INCOMPLETE: ") {
					verdict = l
				}
			}
			if got := strings.Contains(verdict, hint); got != tt.want {
				t.Errorf("the hint is on the verdict line: %v, want %v\nstdout:\n%s", got, tt.want, r.stdout)
			}
			if got := strings.Count(r.stdout, hint); tt.want && got != 2 {
				t.Errorf("the hint appears %d times, want 2 (verdict, Errors)\nstdout:\n%s", got, r.stdout)
			}
		})
	}
}

// closeOnSubscribe listens on a free loopback port until the test ends:
// it answers each connection's first packet (CONNECT) with a CONNACK
// accepting it and closes the connection when the next packet
// (SUBSCRIBE) has been read whole. It returns the address.
func closeOnSubscribe(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(20 * time.Second))
				br := bufio.NewReader(c)
				if typ, err := readMQTTPacket(br); err != nil || typ != 1 {
					return
				}
				if _, err := c.Write([]byte{0x20, 0x02, 0x00, 0x00}); err != nil {
					return
				}
				_, _ = readMQTTPacket(br) // SUBSCRIBE (or DISCONNECT): then close
			}()
		}
	}()
	return ln.Addr().String()
}

// readMQTTPacket reads one MQTT packet and returns its type.
func readMQTTPacket(br *bufio.Reader) (byte, error) {
	b0, err := br.ReadByte()
	if err != nil {
		return 0, err
	}
	n, shift := 0, 0
	for i := 0; i < 4; i++ {
		b, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		n |= int(b&0x7f) << shift
		shift += 7
		if b&0x80 == 0 {
			break
		}
	}
	if _, err := br.Discard(n); err != nil {
		return 0, err
	}
	return b0 >> 4, nil
}

// TestRunListenOnlyReceivedNothing checks the same for a plan file that
// only subscribes, run with mqplan run: received > 0 is a built-in check
// there too, in the JSON result and the JUnit report as every built-in
// check is, and a threshold of the plan's own on received replaces it.
func TestRunListenOnlyReceivedNothing(t *testing.T) {
	t.Parallel()
	const plan = `broker: {url: embedded, protocol: 5}
groups:
  - name: sub
    count: 2
    subscribe: {topic: "nobody/#"}
duration: 1s
`
	for _, tt := range []struct {
		name, extra string
		code        int
		json, junit []string
	}{
		{"no thresholds: fails", "", exitFail,
			[]string{`"expr": "received > 0"`, `"builtin": true`},
			[]string{`name="built-in check: received &gt; 0"`, `<failure message="received &gt; 0: received=0"`}},
		{"received >= 0: passes", "thresholds: [\"received >= 0\"]\n", exitPass,
			[]string{`"expr": "received >= 0"`}, []string{`name="received &gt;= 0"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "listen.yaml")
			if err := os.WriteFile(path, []byte(plan+tt.extra), 0o644); err != nil {
				t.Fatal(err)
			}
			jsonPath, junitPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "junit.xml")
			r := runCmd(t, "run", "--out", "json="+jsonPath, "--out", "junit="+junitPath, path)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			for file, wants := range map[string][]string{jsonPath: tt.json, junitPath: tt.junit} {
				b, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range wants {
					if !strings.Contains(string(b), w) {
						t.Errorf("%s lacks %q:\n%s", filepath.Base(file), w, b)
					}
				}
			}
			if tt.code == exitPass && strings.Contains(r.stdout+r.stderr, "received > 0") {
				t.Errorf("the built-in check is there beside the plan's own threshold on received:\n%s", r.stdout)
			}
		})
	}
}
