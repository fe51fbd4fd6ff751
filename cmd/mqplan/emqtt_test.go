package main

import (
	"bufio"
	"bytes"
	"flag"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/certtest"
	"github.com/mqplan/mqplan/internal/loopback"
	"github.com/mqplan/mqplan/runner"
)

// updateEmqtt rewrites the --print-plan golden files instead of comparing:
//
//	go test ./cmd/mqplan -run TestEmqttPrintPlan -update
var updateEmqtt = flag.Bool("update", false, "rewrite the golden files of cmd/mqplan")

// runInProcess runs one command line in this process (for the commands
// that print and exit without connecting).
func runInProcess(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestEmqttParse(t *testing.T) {
	defaults := func(k emqttKind) emqttOptions {
		o := *defaultEmqttOptions(k)
		o.topics = []string{"t"}
		return o
	}
	tests := []struct {
		name string
		kind emqttKind
		args []string
		// want returns the expected options given emqtt-bench's defaults.
		want func(o *emqttOptions)
		// commandLine, when set, is the recorded (masked) command line.
		commandLine string
	}{
		{name: "defaults are emqtt-bench's", kind: emqttSub, args: []string{"-t", "t"},
			want: func(o *emqttOptions) {}},
		{name: "short option, separate value", kind: emqttSub, args: []string{"-t", "t", "-c", "5"},
			want: func(o *emqttOptions) { o.count = 5 }},
		{name: "short option, attached value", kind: emqttSub, args: []string{"-tt", "-c5"},
			want: func(o *emqttOptions) { o.count = 5 }},
		{name: "long option, separate value", kind: emqttSub, args: []string{"--topic", "t", "--count", "5"},
			want: func(o *emqttOptions) { o.count = 5 }},
		{name: "long option, = value", kind: emqttSub, args: []string{"--topic=t", "--count=5"},
			want: func(o *emqttOptions) { o.count = 5 }},
		{name: "- and _ are the same in long names", kind: emqttPub, args: []string{"-t", "t", "--interval-of-msg", "50", "--session_expiry", "9"},
			want: func(o *emqttOptions) { o.msgInterval, o.expiry = 50, 9 }},
		{name: "every value option", kind: emqttPub,
			args: []string{"-h", "a,b", "-p", "1884", "-V", "4", "-c", "7", "-n", "100", "-i", "5", "-R", "300", "-I", "20",
				"-u", "me", "-P", "pw", "-t", "t", "-s", "64", "-q", "2", "-k", "30", "-x", "60", "-L", "70",
				"--certfile", "c.pem", "--keyfile", "k.pem", "-S", "--cacertfile", "ca.pem", "--ifaddr", "10.0.0.1,10.0.0.2",
				"--prefix", "px", "--duration", "90s", "--threshold", "p99 < 5ms", "--threshold", "loss_rate == 0"},
			want: func(o *emqttOptions) {
				o.hosts, o.port, o.version, o.count, o.startNumber, o.interval, o.connRate, o.msgInterval = []string{"a", "b"}, 1884, 4, 7, 100, 5, 300, 20
				o.username, o.password, o.hasPassword, o.size, o.qos, o.keepalive, o.expiry, o.limit = "me", "pw", true, 64, 2, 30, 60, 70
				o.certFile, o.keyFile, o.ssl, o.caFile, o.ifaddrs = "c.pem", "k.pem", true, "ca.pem", []string{"10.0.0.1", "10.0.0.2"}
				o.prefix, o.duration, o.hasDuration, o.thresholds = "px", 90*time.Second, true, []string{"p99 < 5ms", "loss_rate == 0"}
			}},
		{name: "a boolean alone is true", kind: emqttPub, args: []string{"-t", "t", "-r", "--ws", "-S"},
			want: func(o *emqttOptions) { o.retain, o.ws, o.ssl = true, true, true }},
		{name: "a boolean takes an explicit value that follows", kind: emqttSub, args: []string{"-t", "t", "-C", "false"},
			want: func(o *emqttOptions) { o.clean = false }},
		{name: "a boolean with = value", kind: emqttSub, args: []string{"-t", "t", "--clean=false", "--ssl=true"},
			want: func(o *emqttOptions) { o.clean, o.ssl = false, true }},
		{name: "a boolean with attached value", kind: emqttSub, args: []string{"-t", "t", "-Cfalse"},
			want: func(o *emqttOptions) { o.clean = false }},
		{name: "getopt's boolean words", kind: emqttSub, args: []string{"-t", "t", "--clean", "no", "-S", "yes"},
			want: func(o *emqttOptions) { o.clean, o.ssl = false, true }},
		{name: "a boolean before another option stays true", kind: emqttPub, args: []string{"-t", "t", "-r", "-c", "3"},
			want: func(o *emqttOptions) { o.retain, o.count = true, 3 }},
		{name: "clumped booleans", kind: emqttPub, args: []string{"-t", "t", "-rS"},
			want: func(o *emqttOptions) { o.retain, o.ssl = true, true }},
		{name: "sub takes several topic filters", kind: emqttSub, args: []string{"-t", "a/#", "-t", "b/+"},
			want: func(o *emqttOptions) { o.topics = []string{"a/#", "b/+"} }},
		{name: "-i 0 and compatibility no-ops", kind: emqttConn, args: []string{"-i", "0", "-l"},
			want: func(o *emqttOptions) { o.interval, o.topics = 0, nil }},
		{name: "--help needs nothing else", kind: emqttPub, args: []string{"--help"},
			want: func(o *emqttOptions) { o.help, o.topics = true, nil }},
		{name: "the password is masked and --print-plan left out of the command line", kind: emqttPub,
			args: []string{"-t", "a b", "-P", "hunter2", "--password=hunter2", "-Phunter2", "--print-plan"},
			want: func(o *emqttOptions) {
				o.topics, o.password, o.hasPassword, o.printPlan = []string{"a b"}, "hunter2", true, true
			},
			commandLine: "mqplan pub -t 'a b' -P '***' '--password=***' '-P***'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseEmqttArgs(tt.kind, tt.args)
			if err != nil {
				t.Fatalf("parse %q: %v", tt.args, err)
			}
			want := defaults(tt.kind)
			tt.want(&want)
			if tt.commandLine != "" && got.commandLine != tt.commandLine {
				t.Errorf("command line %q, want %q", got.commandLine, tt.commandLine)
			}
			if strings.Contains(got.commandLine, "hunter2") {
				t.Errorf("the command line shows the password: %q", got.commandLine)
			}
			got.commandLine, want.commandLine = "", ""
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("parse %q:\n got %+v\nwant %+v", tt.args, *got, want)
			}
		})
	}
}

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
		{"-I is pub's", []string{"sub", "-t", "x", "-I", "10"}, "-I/--interval_of_msg is not an option of sub (it is for pub)"},
		{"-I 0 is as fast as possible", []string{"pub", "-t", "x", "-I", "0"}, "-I/--interval_of_msg: 0 (publish as fast as possible) is not supported"},
		{"emqtt-bench option mqplan lacks", []string{"pub", "-t", "x", "-m", "hello"}, "emqtt-bench's -m/--message is not supported: mqplan's payloads carry its measurement header"},
		{"emqtt-bench long option mqplan lacks", []string{"pub", "-t", "x", "--quic"}, "emqtt-bench's --quic is not supported"},
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
			code, stdout, stderr := runInProcess(tt.args...)
			if code != exitInvalid {
				t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr)
			}
			if strings.Contains(stderr, emqttPlanFile) {
				t.Errorf("the message points into the generated plan instead of at an option:\n%s", stderr)
			}
		})
	}
}

func TestEmqttHelp(t *testing.T) {
	for _, kind := range []emqttKind{emqttConn, emqttSub, emqttPub} {
		t.Run(string(kind), func(t *testing.T) {
			code, stdout, stderr := runInProcess(string(kind), "--help")
			if code != exitPass || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			flat := strings.Join(strings.Fields(stdout), " ")
			for _, opt := range emqttOpts {
				if !opt.takes(kind) {
					if strings.Contains(flat, "--"+opt.long+" ") {
						t.Errorf("--help lists --%s, which %s does not take", opt.long, kind)
					}
					continue
				}
				names := "--" + opt.long
				if opt.short != 0 {
					names = "-" + string(opt.short) + ", " + names
				}
				if !strings.Contains(flat, names) {
					t.Errorf("--help lacks %q", names)
				}
				if opt.def != "" && !strings.Contains(flat, "[default: "+opt.def+"]") {
					t.Errorf("--help lacks the default of --%s (%s)", opt.long, opt.def)
				}
			}
		})
	}
}

// TestEmqttPrintPlan pins the plans that command lines compile into.
func TestEmqttPrintPlan(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stderr string // a note expected on stderr
	}{
		{name: "sub_defaults", args: []string{"sub", "-t", "t"}},
		{name: "sub_everything", args: []string{"sub", "-h", "n1,n2,::1", "-p", "1884", "-V", "4", "-c", "50", "-n", "100",
			"-i", "5", "-t", "bench/%i", "-t", "all/#", "-q", "1", "-k", "60", "-C", "false", "-x", "30",
			"--prefix", "load", "--ifaddr", "127.0.0.2,127.0.0.3", "--duration", "10m"}},
		{name: "pub_limit_thresholds", args: []string{"pub", "-t", "bench/%i/100%", "-c", "3", "-I", "100", "-s", "1024",
			"-q", "2", "-r", "-L", "10", "-u", "user%1", "-P", "hunter2", "--threshold", "p99 < 50ms", "--threshold", "loss_rate == 0"},
			stderr: "-L 10 is a limit over all 3 clients; a plan's limit is per client, so each sends 4 (12 in all)"},
		{name: "conn_tls_ws", args: []string{"conn", "-S", "--ws", "--cacertfile", "/etc/mqplan/ca.pem", "--certfile", "/etc/mqplan/client.pem",
			"--keyfile", "/etc/mqplan/client.key", "-h", "broker.example", "-p", "8084", "-c", "1000", "-R", "500", "--duration", "1h30m"}},
		{name: "literal_dollars", args: []string{"sub", "-t", "$SYS/${HOME}/$$", "-u", "${USER}", "-i", "0", "--insecure", "-S"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runInProcess(append(tt.args, "--print-plan")...)
			if code != exitPass {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if tt.stderr != "" && !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, stderr)
			}
			if strings.Contains(stdout, "hunter2") || strings.Contains(stderr, "hunter2") {
				t.Errorf("the password is printed:\n%s\n%s", stdout, stderr)
			}
			golden := filepath.Join("..", "..", "testdata", "golden", "emqtt", tt.name+".yaml")
			if *updateEmqtt {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./cmd/mqplan -run TestEmqttPrintPlan -update creates it)", err)
			}
			if stdout != string(want) {
				t.Errorf("--print-plan differs from %s (-update rewrites it)\n--- got ---\n%s\n--- want ---\n%s", golden, stdout, want)
			}
		})
	}
}

// TestEmqttPlanValues checks what the printed plan means once loaded: the
// password arrives through ${MQTT_PASSWORD} without being written, and
// user values are taken literally.
func TestEmqttPlanValues(t *testing.T) {
	t.Setenv(emqttPasswordVar, "from-the-environment")
	t.Setenv("HOME", "/home/x")
	o, err := parseEmqttArgs(emqttPub, []string{"-t", "$SYS/${HOME}/%i/50%", "-u", "${USER}%i", "-P", "p${A}$$w", "-c", "2", "-n", "9", "--prefix", "pre"})
	if err != nil {
		t.Fatal(err)
	}
	text, err := o.planYAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "p${A}") {
		t.Fatalf("the plan holds the password:\n%s", text)
	}
	prog, err := o.loadEmqttPlan(text, "run1")
	if err != nil {
		t.Fatal(err)
	}
	c := prog.Clients[1]
	want := []string{"p${A}$$w", "${USER}%i", "pre_bench_pub_11", "$SYS/${HOME}/11/50%"}
	got := []string{c.Password.Reveal(), c.Username, c.ID, c.Publish.Topic}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("password, username, client id, topic of client 2:\n got %q\nwant %q", got, want)
	}
}

// TestEmqttProgress checks the per-second lines made from the runner's
// progress: the runner's totals and rates, a line only when the count moved.
func TestEmqttProgress(t *testing.T) {
	s := time.Second
	tests := []struct {
		name  string
		kind  emqttKind
		steps []runner.Progress
		want  string
	}{
		{name: "sub", kind: emqttSub, steps: []runner.Progress{
			{Elapsed: 1 * s}, {Elapsed: 2 * s, RecvRate: 100, Received: 100}, {Elapsed: 3 * s, RecvRate: 50, Received: 150},
			{Elapsed: 4 * s, Received: 150}, {Elapsed: 4*s + s/4, RecvRate: 40, Received: 160},
		}, want: "recv(2s): total=100, rate=100(msg/sec)\nrecv(3s): total=150, rate=50(msg/sec)\nrecv(4s): total=160, rate=40(msg/sec)\n"},
		{name: "pub", kind: emqttPub, steps: []runner.Progress{
			{Elapsed: 1 * s, SendRate: 20, RecvRate: 7, Sent: 20}, {Elapsed: 2 * s, SendRate: 20, Sent: 40},
		}, want: "sent(1s): total=20, rate=20(msg/sec)\nsent(2s): total=40, rate=20(msg/sec)\n"},
		{name: "pub: the final snapshot does not print its second again", kind: emqttPub, steps: []runner.Progress{
			{Elapsed: 1 * s, SendRate: 99, Sent: 99}, {Elapsed: s + s/50, SendRate: 44, Sent: 100},
		}, want: "sent(1s): total=99, rate=99(msg/sec)\n"},
		{name: "conn", kind: emqttConn, steps: []runner.Progress{
			{Elapsed: 1 * s, Connected: 3}, {Elapsed: 2 * s, Connected: 5}, {Elapsed: 3 * s, Connected: 5}, {Elapsed: 4 * s, Connected: 4},
		}, want: "connected(1s): total=3, rate=3(conn/sec)\nconnected(2s): total=5, rate=2(conn/sec)\nconnected(4s): total=4, rate=-1(conn/sec)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			p := &emqttProgress{w: &b, kind: tt.kind}
			for _, st := range tt.steps {
				p.update(st)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}

// startEmqttBroker runs `mqplan broker` with args and returns the URLs it
// listens on (n of them).
func startEmqttBroker(t *testing.T, n int, args ...string) []*url.URL {
	t.Helper()
	_, stderr := startBinary(t, nil, append([]string{"broker", "--listen", "127.0.0.1:0"}, args...)...)
	raw, rest := listening(t, stderr, n)
	go func() { _, _ = io.Copy(io.Discard, rest) }()
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

var emqttLineRE = regexp.MustCompile(`(?m)^(recv|sent|connected)\((\d+)s\): total=(\d+), rate=(-?\d+)\((msg|conn)/sec\)$`)

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
	u := startEmqttBroker(t, 1)[0]
	host, port := u.Hostname(), u.Port()

	var subOut bytes.Buffer
	sub, subStderr := startBinary(t, &subOut, "sub", "-h", host, "-p", port, "-t", "t", "-c", "5", "--duration", "5s",
		"--threshold", "groups.sub.received > 0")
	// The reads below end when the process does; make sure it does.
	killer := time.AfterFunc(20*time.Second, func() { _ = sub.Process.Kill() })
	defer killer.Stop()
	// Publish once every subscriber has its SUBACK, as a user would
	// start pub after sub says so.
	var subErr strings.Builder
	sc := bufio.NewScanner(subStderr)
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

	pub := runBinary(t, "pub", "-h", host, "-p", port, "-t", "t", "-c", "2", "-I", "100", "--duration", "2s")
	<-subErrDone
	subCode := wait(t, sub, 15*time.Second)

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
		out := subOut.String()
		// 40 messages, each delivered to 5 subscribers.
		if got := lastTotal(out, "recv"); got != 200 {
			t.Errorf("last recv total %d, want 200 (40 messages x 5 subscribers)", got)
		}
		if subCode != 0 || !strings.Contains(out, "PASS: 1 of 1 threshold held") {
			t.Errorf("sub exit %d, want 0 with groups.sub.received > 0 held\n%s\n%s", subCode, out, subErr.String())
		}
	})
}

// TestEmqttCtrlC checks that Ctrl-C is a normal end for these commands:
// the report, then the thresholds' verdict as exit code.
func TestEmqttCtrlC(t *testing.T) {
	u := startEmqttBroker(t, 1)[0]
	cmd := exec.Command(binary, "conn", "-h", u.Hostname(), "-p", u.Port(), "-c", "3", "--threshold", "connect.failed == 0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// The reads below end when the process does; make sure it does.
	killer := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() })
	defer killer.Stop()
	sc := bufio.NewScanner(stdout)
	var out strings.Builder
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "connected(") && strings.Contains(sc.Text(), "total=3,") {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
	}
	code := wait(t, cmd, 10*time.Second)
	if code != 0 || !strings.Contains(out.String(), "PASS: 1 of 1 threshold held") {
		t.Fatalf("exit %d, want 0 with the report\n%s\n%s", code, out.String(), stderr.String())
	}
	if !strings.Contains(out.String(), "connected(") {
		t.Errorf("no connected line:\n%s", out.String())
	}
}

// TestEmqttExitCodes runs the binary for the outcomes that need a process:
// an unreachable broker, a failed threshold, TLS, WebSocket and passwords.
func TestEmqttExitCodes(t *testing.T) {
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
			[]string{"sent(", "PASS"}},
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
			r := runBinary(t, tt.args...)
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
