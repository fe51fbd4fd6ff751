package main

import (
	"bufio"
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqplan/mqplan/cmd/mqplan/internal/emqttbench"
	"github.com/mqplan/mqplan/internal/certtest"
	"github.com/mqplan/mqplan/internal/golden"
	"github.com/mqplan/mqplan/internal/loopback"
)

// The emqtt-bench commands as the command line runs them: exit codes,
// messages, and runs against a broker. The option parser, the plans
// command lines compile into and the per-second lines are tested in
// package emqttbench.

// TestEmqttBadOptions checks that every command-line problem, found by
// the option parser or by the plan language, exits 2 naming the option.
func TestEmqttBadOptions(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown long option, with a suggestion", []string{"sub", "-t", "t", "--cout", "5"}, "unknown option --cout; did you mean --count?"},
		{"unknown short option", []string{"sub", "-t", "t", "-z"}, "unknown option -z"},
		{"-h is the host, not help", []string{"sub", "-h"}, "-h/--host needs a value (HOST[,HOST...]); help is --help"},
		{"missing value", []string{"pub", "-t", "t", "-c"}, "-c/--count needs a value (N)"},
		{"not a number", []string{"sub", "-t", "t", "-c", "many"}, `-c/--count: must be a whole number, got "many"`},
		{"count 0", []string{"sub", "-t", "t", "-c", "0"}, "-c/--count: must be at least 1, got 0"},
		{"port out of range", []string{"conn", "-p", "70000"}, "-p/--port: must be at most 65535, got 70000"},
		{"qos 3", []string{"pub", "-t", "t", "-q", "3"}, `-q/--qos: must be 0, 1 or 2, got "3"`},
		{"version 6", []string{"conn", "-V", "6"}, `-V/--version: must be 3, 4 or 5, got "6"`},
		{"bad boolean", []string{"conn", "--clean=maybe"}, `-C/--clean: must be true or false, got "maybe"`},
		{"empty host in the list", []string{"conn", "-h", "a,,b"}, `-h/--host: has an empty item in "a,,b"`},
		{"a value option in a clump", []string{"pub", "-t", "t", "-rc"}, "-c/--count takes a value (N), so it cannot be combined"},
		{"sub needs a topic", []string{"sub", "-c", "5"}, "-t/--topic is required: say which topic filter to subscribe to"},
		{"pub needs a topic", []string{"pub"}, "-t/--topic is required: say which topic to publish to"},
		{"pub takes one topic", []string{"pub", "-t", "a", "-t", "b"}, "-t/--topic is given 2 times"},
		{"topic is not a conn option", []string{"conn", "-t", "x"}, "-t/--topic is not an option of conn (it is for sub and pub)"},
		{"--allow-empty is sub's", []string{"pub", "-t", "x", "--allow-empty"}, "--allow-empty is not an option of pub (it is for sub)"},
		{"-I is pub's", []string{"sub", "-t", "x", "-I", "10"}, "-I/--interval_of_msg is not an option of sub (it is for pub)"},
		{"-F above the window mqplan keeps", []string{"pub", "-t", "x", "-I", "0", "-q", "1", "-F", "1000"}, "-F/--inflight: must be at most 256, got 1000"},
		{"-F 0", []string{"pub", "-t", "x", "-I", "0", "-q", "1", "-F", "0"}, "-F/--inflight: must be at least 1, got 0"},
		{"emqtt-bench option mqplan lacks", []string{"pub", "-t", "x", "--topics-payload", "t.json"}, "emqtt-bench's --topics-payload is not supported: a file of topics"},
		{"emqtt-bench's payload templates", []string{"pub", "-t", "x", "-m", "template://p.json"}, "-m/--message: template://FILE is not supported: emqtt-bench's template placeholders are not mapped"},
		{"emqtt-bench long option mqplan lacks", []string{"pub", "-t", "x", "--quic"}, "emqtt-bench's --quic is not supported"},
		{"random waits with the closed loop", []string{"pub", "-t", "x", "-I", "0", "--max-random-wait", "100"}, "--min-random-wait/--max-random-wait are not supported with -I 0"},
		{"random wait out of range", []string{"pub", "-t", "x", "--max-random-wait", "-5"}, "--max-random-wait: must be at least 0, got -5"},
		{"certfile without keyfile", []string{"conn", "-S", "--certfile", "c.pem"}, "--certfile and --keyfile go together"},
		{"certificates need -S", []string{"conn", "--certfile", "c.pem", "--keyfile", "k.pem"}, "--certfile and --keyfile need -S/--ssl"},
		{"CA needs -S", []string{"conn", "--cacertfile", "ca.pem"}, "--cacertfile and --insecure need -S/--ssl"},
		{"a positional argument", []string{"sub", "-t", "t", "extra"}, `unexpected argument "extra"`},
		{"bad duration", []string{"conn", "--duration", "soon"}, `--duration: must be a positive duration like 30s or 10m, got "soon"`},
		{"bad host", []string{"conn", "-h", "a/b"}, `-h/--host: "a/b" is not a host name or IP address`},
		// Problems the plan language finds, reported against the option.
		{"size under the header", []string{"pub", "-t", "t", "-s", "8"}, "-s/--size: must be at least 16"},
		{"invalid topic filter", []string{"sub", "-t", "a/#/b"}, "-t/--topic: "},
		{"wildcard in a publish topic", []string{"pub", "-t", "a/+"}, "-t/--topic: "},
		{"%u without a username", []string{"pub", "-t", "x/%u"}, "-t/--topic: uses %u, but the group has no username"},
		{"bad source address", []string{"conn", "--ifaddr", "1.2.3"}, "--ifaddr: must be an IP address"},
		{"unknown threshold metric", []string{"conn", "--threshold", "p98 < 1ms"}, `--threshold "p98 < 1ms": unknown metric "p98"; did you mean "p99"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, tt.args...)
			if r.code != exitInvalid {
				t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, r.stderr)
			}
			if strings.Contains(r.stderr, emqttbench.PlanFile) {
				t.Errorf("the message points into the generated plan instead of at an option:\n%s", r.stderr)
			}
		})
	}
}

// TestEmqttHelp checks that --help is the command's help on standard
// output, exit 0 (emqttbench's TestHelp checks what it says).
func TestEmqttHelp(t *testing.T) {
	for _, kind := range []emqttbench.Kind{emqttbench.Conn, emqttbench.Sub, emqttbench.Pub} {
		t.Run(string(kind), func(t *testing.T) {
			r := runCmd(t, string(kind), "--help")
			if r.code != exitPass || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			var want bytes.Buffer
			emqttbench.WriteHelp(&want, kind)
			if r.stdout != want.String() {
				t.Errorf("stdout is not the help:\n%s", r.stdout)
			}
		})
	}
}

// TestEmqttPrintPlan checks that --print-plan prints the plan alone on
// standard output, the notes on standard error, and never the password
// (emqttbench's TestPrintPlan pins the plans).
func TestEmqttPrintPlan(t *testing.T) {
	r := runCmd(t, "pub", "-t", "bench/%i/100%", "-c", "3", "-I", "100", "-s", "1024",
		"-q", "2", "-r", "-L", "10", "-u", "user%1", "-P", "hunter2", "--threshold", "p99 < 50ms", "--threshold", "loss_rate == 0", "--print-plan")
	if r.code != exitPass {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// The plan emqttbench's TestPrintPlan pins (the same bytes: -update
	// here rewrites it as that test would).
	golden.Check(t, filepath.Join("cmd", "mqplan", "internal", "emqttbench", "testdata", "golden", "pub_limit_thresholds.yaml"), []byte(r.stdout))
	wantErr := "mqplan: note: -L 10 is a limit over all 3 clients; a plan's limit is per client, so each sends 4 (12 in all)\n" +
		"mqplan: note: the password is not written in the plan; it reads it from the environment variable MQTT_PASSWORD\n"
	if r.stderr != wantErr {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, wantErr)
	}
	if strings.Contains(r.stdout, "hunter2") || strings.Contains(r.stderr, "hunter2") {
		t.Errorf("the password is printed:\n%s\n%s", r.stdout, r.stderr)
	}
}

// startEmqttBroker runs `mqplan broker` with args and returns the URLs it
// listens on (n of them).
func startEmqttBroker(t *testing.T, n int, args ...string) []*url.URL {
	t.Helper()
	b := startCmd(t, append([]string{"broker", "--listen", "127.0.0.1:0"}, args...)...)
	raw, _ := listening(t, b.stderr, n)
	urls := make([]*url.URL, len(raw))
	for i, r := range raw {
		u, err := url.Parse(r)
		if err != nil {
			t.Fatal(err)
		}
		urls[i] = u
	}
	return urls
}

// emqttLineRE is emqtt-bench's per-second counter line, "~s(~w): total=~w,
// rate=~w(msg/sec)~n" with milliseconds since start in parentheses.
var emqttLineRE = regexp.MustCompile(`(?m)^(recv|sent)\((\d+)\): total=(\d+), rate=(\d+)\(msg/sec\)$`)

// lastTotal returns the total of the last per-second line of the kind.
func lastTotal(out, name string) int {
	total := -1
	for _, m := range emqttLineRE.FindAllStringSubmatch(out, -1) {
		if m[1] == name {
			total, _ = strconv.Atoi(m[3])
		}
	}
	return total
}

// TestEmqttSubPub is the example: `mqplan sub` in one terminal,
// `mqplan pub` in another, against `mqplan broker`.
func TestEmqttSubPub(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"binary payloads", nil},
		// -m's text is the payload, the header in a user property: the
		// sub, which does not know the text, measures from the header.
		{"-m text with the header in a user property", []string{"-m", `{"temp":21.5,"unit":"C"} 100%`}},
	} {
		t.Run(tt.name, func(t *testing.T) { emqttSubPub(t, tt.args) })
	}
}

func emqttSubPub(t *testing.T, pubArgs []string) {
	u := startEmqttBroker(t, 1)[0]
	host, port := u.Hostname(), u.Port()

	// The sub listens for 5s; the pub's 40 messages (200 deliveries)
	// arrive within about 2s of it, so its rate over the deliveries' window
	// is about 100/s, where over the whole listening it would be about 40/s.
	sub := startCmd(t, "sub", "-h", host, "-p", port, "-t", "t", "-c", "5", "--duration", "5s",
		"--threshold", "groups.sub.received > 0", "--threshold", "recv_rate > 80")
	// The reads below end when the command does; make sure they do.
	killer := time.AfterFunc(20*time.Second, sub.kill)
	defer killer.Stop()
	// Publish once every subscriber has its SUBACK, as a user would
	// start pub after sub says so.
	var subErr strings.Builder
	sc := bufio.NewScanner(sub.stderr)
	for sc.Scan() {
		subErr.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "5 of 5 clients connected and subscribed") {
			break
		}
	}
	subErrDone := make(chan struct{})
	go func() {
		for sc.Scan() {
			subErr.WriteString(sc.Text() + "\n")
		}
		close(subErrDone)
	}()

	pub := runCmd(t, append([]string{"pub", "-h", host, "-p", port, "-t", "t", "-c", "2", "-I", "100", "--duration", "2s"}, pubArgs...)...)
	<-subErrDone
	subCode := sub.wait(t, 15*time.Second)

	t.Run("pub prints sent lines and its report", func(t *testing.T) {
		if pub.code != 0 {
			t.Fatalf("pub exit %d\n%s\n%s", pub.code, pub.stdout, pub.stderr)
		}
		// 2 clients, one message each every 100 ms, for 2 s.
		if got := lastTotal(pub.stdout, "sent"); got != 40 {
			t.Errorf("last sent total %d, want 40:\n%s", got, pub.stdout)
		}
		if !strings.Contains(pub.stdout, "PASS: run completed (no thresholds)") {
			t.Errorf("no report:\n%s", pub.stdout)
		}
		if !strings.Contains(pub.stderr, "2 of 2 clients connected and publishing") {
			t.Errorf("no notice on stderr:\n%s", pub.stderr)
		}
	})
	t.Run("sub prints recv lines and receives the pub's messages", func(t *testing.T) {
		out := sub.stdout.String()
		// 40 messages, each delivered to 5 subscribers.
		if got := lastTotal(out, "recv"); got != 200 {
			t.Errorf("last recv total %d, want 200 (40 messages x 5 subscribers)", got)
		}
		if subCode != 0 || !strings.Contains(out, "PASS: 2 of 2 thresholds held") {
			t.Errorf("sub exit %d, want 0 with groups.sub.received > 0 and recv_rate > 80 held\n%s\n%s", subCode, out, subErr.String())
		}
		if !strings.Contains(out, "from first to last delivery") {
			t.Errorf("the report does not say what the rates are over:\n%s", out)
		}
		if !strings.Contains(out, "connected: 5\n") {
			t.Errorf("no connected line:\n%s", out)
		}
	})
}

// TestEmqttCtrlC checks that Ctrl-C is a normal end for these commands:
// the report, then the thresholds' verdict as exit code.
func TestEmqttCtrlC(t *testing.T) {
	t.Parallel()
	u := startEmqttBroker(t, 1)[0]
	cmd := startCmd(t, "conn", "-h", u.Hostname(), "-p", u.Port(), "-c", "3", "--threshold", "connect.failed == 0")
	// The reads below end when the command does; make sure they do.
	killer := time.AfterFunc(20*time.Second, cmd.kill)
	defer killer.Stop()
	sc := bufio.NewScanner(cmd.stdout)
	var out strings.Builder
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if sc.Text() == "connected: 3" {
			break
		}
	}
	cmd.signal(t, syscall.SIGINT)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
	}
	code := cmd.wait(t, 10*time.Second)
	if code != 0 || !strings.Contains(out.String(), "PASS: 1 of 1 threshold held") {
		t.Fatalf("exit %d, want 0 with the report\n%s\n%s", code, out.String(), cmd.stderr.String())
	}
	if !strings.Contains(out.String(), "connected: 3\n") {
		t.Errorf("no connected line:\n%s", out.String())
	}
}

// TestEmqttExitCodes runs the commands against brokers for the outcomes
// of a run: an unreachable broker, a failed threshold, TLS, WebSocket and
// passwords.
func TestEmqttExitCodes(t *testing.T) {
	t.Parallel()
	certs := certtest.Generate(t)
	auth := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(auth, []byte("alice:s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	urls := startEmqttBroker(t, 2, "--ws", loopback.FreeAddr(t), "--tls-cert", certs.ServerCert, "--tls-key", certs.ServerKey, "--auth", auth)
	tlsURL, wssURL := urls[0], urls[1]
	plain := startEmqttBroker(t, 1)[0]

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
	}{
		{"unreachable broker: 3", []string{"conn", "-h", "127.0.0.1", "-p", "1", "-c", "2", "--duration", "1s"}, 3,
			[]string{"INCOMPLETE", "none of its 2 clients could connect"}},
		{"a threshold fails: 1", []string{"conn", "-h", plain.Hostname(), "-p", plain.Port(), "-c", "2", "--duration", "1s", "--threshold", "connect.ok > 2"}, 1,
			[]string{"FAIL: 1 of 1 threshold failed"}},
		{"MQTT 3.1.1: 0", []string{"pub", "-V", "4", "-h", plain.Hostname(), "-p", plain.Port(), "-t", "t/%i", "-c", "2", "-I", "50", "-q", "1", "--duration", "1s", "--threshold", "acked == sent"}, 0,
			[]string{"PASS: 1 of 1 threshold held"}},
		{"-L ends pub: 0", []string{"pub", "-h", plain.Hostname(), "-p", plain.Port(), "-t", "t", "-c", "2", "-I", "20", "-L", "10"}, 0,
			[]string{"sent(", "publish complete\n", "PASS"}},
		{"TLS with a password: 0", []string{"conn", "-S", "--cacertfile", certs.CA, "-u", "alice", "-P", "s3cret", "-h", tlsURL.Hostname(), "-p", tlsURL.Port(), "-c", "2", "--duration", "1s", "--threshold", "connect.ok == 2"}, 0,
			[]string{"PASS: 1 of 1 threshold held", "mqtts://"}},
		{"WebSocket over TLS: 0", []string{"conn", "-S", "--ws", "--cacertfile", certs.CA, "-u", "alice", "-P", "s3cret", "-h", wssURL.Hostname(), "-p", wssURL.Port(), "-c", "2", "--duration", "1s", "--threshold", "connect.ok == 2"}, 0,
			[]string{"PASS: 1 of 1 threshold held", "wss://"}},
		{"wrong password: 3", []string{"conn", "-S", "--insecure", "-u", "alice", "-P", "wrong-pw", "-h", tlsURL.Hostname(), "-p", tlsURL.Port(), "-c", "2", "--duration", "1s"}, 3,
			[]string{"INCOMPLETE", "bad user name or password"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each mostly waits for its --duration
			start := time.Now()
			r := runCmd(t, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
			if strings.Contains(r.stdout+r.stderr, "s3cret") || strings.Contains(r.stdout+r.stderr, "wrong-pw") {
				t.Errorf("the password is printed:\n%s\n%s", r.stdout, r.stderr)
			}
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("took %v", el)
			}
		})
	}
}
