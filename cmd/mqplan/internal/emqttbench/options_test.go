package emqttbench

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	defaults := func(k Kind) Options {
		o := *defaults(k)
		o.topics = []string{"t"}
		return o
	}
	tests := []struct {
		name string
		kind Kind
		args []string
		// want returns the expected options given emqtt-bench's defaults.
		want func(o *Options)
		// commandLine, when set, is the recorded (masked) command line.
		commandLine string
	}{
		{name: "defaults are emqtt-bench's", kind: Sub, args: []string{"-t", "t"},
			want: func(o *Options) {}},
		{name: "short option, separate value", kind: Sub, args: []string{"-t", "t", "-c", "5"},
			want: func(o *Options) { o.count = 5 }},
		{name: "short option, attached value", kind: Sub, args: []string{"-tt", "-c5"},
			want: func(o *Options) { o.count = 5 }},
		{name: "long option, separate value", kind: Sub, args: []string{"--topic", "t", "--count", "5"},
			want: func(o *Options) { o.count = 5 }},
		{name: "long option, = value", kind: Sub, args: []string{"--topic=t", "--count=5"},
			want: func(o *Options) { o.count = 5 }},
		{name: "- and _ are the same in long names", kind: Pub, args: []string{"-t", "t", "--interval-of-msg", "50", "--session_expiry", "9"},
			want: func(o *Options) { o.msgInterval, o.expiry = 50, 9 }},
		{name: "every value option", kind: Pub,
			args: []string{"-h", "a,b", "-p", "1884", "-V", "4", "-c", "7", "-n", "100", "-i", "5", "-R", "300", "-I", "20",
				"-u", "me", "-P", "pw", "-t", "t", "-s", "64", "-q", "2", "-k", "30", "-x", "60", "-L", "70",
				"--certfile", "c.pem", "--keyfile", "k.pem", "-S", "--cacertfile", "ca.pem", "--ifaddr", "10.0.0.1,10.0.0.2",
				"--prefix", "px", "--duration", "90s", "--threshold", "p99 < 5ms", "--threshold", "loss_rate == 0"},
			want: func(o *Options) {
				o.hosts, o.port, o.version, o.count, o.startNumber, o.interval, o.connRate, o.msgInterval = []string{"a", "b"}, 1884, 4, 7, 100, 5, 300, 20
				o.username, o.password, o.hasPassword, o.size, o.qos, o.keepalive, o.expiry, o.limit = "me", "pw", true, 64, 2, 30, 60, 70
				o.certFile, o.keyFile, o.ssl, o.caFile, o.ifaddrs = "c.pem", "k.pem", true, "ca.pem", []string{"10.0.0.1", "10.0.0.2"}
				o.prefix, o.duration, o.hasDuration, o.thresholds = "px", 90*time.Second, true, []string{"p99 < 5ms", "loss_rate == 0"}
			}},
		{name: "-I 0 and -F: the closed loop", kind: Pub, args: []string{"-t", "t", "-I", "0", "-F", "32", "-q", "1"},
			want: func(o *Options) { o.msgInterval, o.inflight, o.hasInflight, o.qos = 0, 32, true, 1 }},
		{name: "--inflight= long form", kind: Pub, args: []string{"-t", "t", "-I0", "--inflight=256"},
			want: func(o *Options) { o.msgInterval, o.inflight, o.hasInflight = 0, 256, true }},
		{name: "random waits", kind: Pub, args: []string{"-t", "t", "--max-random-wait", "500", "--min_random_wait=20"},
			want: func(o *Options) { o.minWait, o.maxWait = 20, 500 }},
		{name: "a boolean alone is true", kind: Pub, args: []string{"-t", "t", "-r", "--ws", "-S"},
			want: func(o *Options) { o.retain, o.ws, o.ssl = true, true, true }},
		{name: "a boolean takes an explicit value that follows", kind: Sub, args: []string{"-t", "t", "-C", "false"},
			want: func(o *Options) { o.clean = false }},
		{name: "a boolean with = value", kind: Sub, args: []string{"-t", "t", "--clean=false", "--ssl=true"},
			want: func(o *Options) { o.clean, o.ssl = false, true }},
		{name: "a boolean with attached value", kind: Sub, args: []string{"-t", "t", "-Cfalse"},
			want: func(o *Options) { o.clean = false }},
		{name: "getopt's boolean words", kind: Sub, args: []string{"-t", "t", "--clean", "no", "-S", "yes"},
			want: func(o *Options) { o.clean, o.ssl = false, true }},
		{name: "a boolean before another option stays true", kind: Pub, args: []string{"-t", "t", "-r", "-c", "3"},
			want: func(o *Options) { o.retain, o.count = true, 3 }},
		{name: "clumped booleans", kind: Pub, args: []string{"-t", "t", "-rS"},
			want: func(o *Options) { o.retain, o.ssl = true, true }},
		{name: "sub takes several topic filters", kind: Sub, args: []string{"-t", "a/#", "-t", "b/+"},
			want: func(o *Options) { o.topics = []string{"a/#", "b/+"} }},
		{name: "-i 0 and compatibility no-ops", kind: Conn, args: []string{"-i", "0", "-l"},
			want: func(o *Options) { o.interval, o.topics = 0, nil }},
		{name: "--help needs nothing else", kind: Pub, args: []string{"--help"},
			want: func(o *Options) { o.help, o.topics = true, nil }},
		{name: "the password is masked and --print-plan left out of the command line", kind: Pub,
			args: []string{"-t", "a b", "-P", "hunter2", "--password=hunter2", "-Phunter2", "--print-plan"},
			want: func(o *Options) {
				o.topics, o.password, o.hasPassword, o.printPlan = []string{"a b"}, "hunter2", true, true
			},
			commandLine: "mqplan pub -t 'a b' -P '***' '--password=***' '-P***'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.kind, tt.args)
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
