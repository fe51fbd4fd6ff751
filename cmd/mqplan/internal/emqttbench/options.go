package emqttbench

import (
	"errors"
	"fmt"
	"github.com/mqplan/mqplan/internal/suggest"
	"github.com/mqplan/mqplan/plans"
	"strconv"
	"strings"
	"time"
)

// This file is the command line of `mqplan conn`, `mqplan sub` and
// `mqplan pub`: emqtt-bench's options, with its short and long names and
// its defaults, parsed the way its getopt library parses them (-c 5, -c5,
// --count 5, --count=5; a boolean option alone means true and may take an
// explicit true/false). Go's flag package cannot be used: -h is the host
// here, short and long names are pairs, and getopt's forms differ.

// Kind is which emqtt-bench command is emulated; its value is the
// command's name.
type Kind string

// The emqtt-bench commands.
const (
	Conn Kind = "conn" // connect clients and hold them
	Sub  Kind = "sub"  // connect clients that subscribe
	Pub  Kind = "pub"  // connect clients that publish
)

// Options are the parsed options of one command line (Parse), which
// Compile turns into a plan.
type Options struct {
	kind Kind

	hosts       []string
	port        int
	version     int
	count       int
	startNumber int
	interval    int // ms between two connections
	connRate    int // connections per second; 0 means use interval
	msgInterval int // ms between one client's messages; 0: as fast as possible (rate: max)
	inflight    int // -F: the closed loop's window of QoS 1/2 publishes
	hasInflight bool
	// minWait and maxWait (ms) are --min-random-wait/--max-random-wait:
	// each publisher's wait before its first message (publish.start_delay).
	minWait, maxWait int
	username         string
	password         string
	hasPassword      bool
	topics           []string
	size             int
	message          string // -m: a literal payload
	hasMessage       bool
	qos              int
	retain           bool
	keepalive        int // seconds
	clean            bool
	expiry           int // session expiry, seconds
	limit            int // messages in all, 0 = unlimited
	ssl              bool
	certFile         string
	keyFile          string
	caFile           string
	insecure         bool
	ws               bool
	ifaddrs          []string
	prefix           string
	duration         time.Duration
	hasDuration      bool
	thresholds       []string
	allowEmpty       bool // --allow-empty: a sub that received nothing passes
	printPlan        bool
	help             bool
	// outs, jsons, metricsListen, baseline and label are what `mqplan run`
	// takes under the same names (--out FORMAT=FILE, --json FILE,
	// --metrics-listen ADDR, --baseline FILE, --label NAME), kept as
	// written: the command checks and uses them as run does.
	outs, jsons   []string
	metricsListen string
	baseline      string
	label         string
	commandLine   string // the command line with the password masked, for the plan's description
}

// Kind returns the command the options are for.
func (o *Options) Kind() Kind { return o.kind }

// Help reports whether --help was asked for: the command prints WriteHelp
// and nothing else (the other options are not checked).
func (o *Options) Help() bool { return o.help }

// Limit is -L: messages to publish in all, 0 for no limit. A pub that
// sent them all ends with emqtt-bench's "publish complete" line.
func (o *Options) Limit() int { return o.limit }

// Outputs are the --out FORMAT=FILE values, in order, as written.
func (o *Options) Outputs() []string { return o.outs }

// JSONs are the --json FILE values, in order.
func (o *Options) JSONs() []string { return o.jsons }

// MetricsListen is --metrics-listen ADDR, "" when not given.
func (o *Options) MetricsListen() string { return o.metricsListen }

// Baseline is --baseline FILE, "" when not given.
func (o *Options) Baseline() string { return o.baseline }

// Label is --label NAME, "" when not given.
func (o *Options) Label() string { return o.label }

// PrintPlan reports whether --print-plan was asked for: the command
// prints the plan (Plan.Text) instead of running it.
func (o *Options) PrintPlan() bool { return o.printPlan }

// option is one option: its names, its argument (empty for a boolean),
// the commands that take it and how it is stored.
type option struct {
	short byte
	long  string
	arg   string // the value's name in --help; "" for a boolean option
	def   string // the default shown in --help; "" for none
	help  string
	kinds string // the commands that take it: letters c(onn), s(ub), p(ub)
	ours  bool   // an mqplan option, not an emqtt-bench one
	// output marks an option about the outputs, not the load: it is left
	// out of the command line the plan records.
	output bool
	set    func(o *Options, v string) error
	// setBool sets a boolean option.
	setBool func(o *Options, v bool)
}

// names is how the option is written in messages: -c/--count or --ws.
func (opt *option) names() string {
	if opt.short != 0 {
		return "-" + string(opt.short) + "/--" + opt.long
	}
	return "--" + opt.long
}

func (opt *option) takes(k Kind) bool { return strings.ContainsRune(opt.kinds, rune(k[0])) }

// options lists every option in --help order. Defaults are emqtt-bench's
// (its src/emqtt_bench.erl option table): host localhost, port 1883,
// version 5, count 200, startnumber 0, interval 10 ms, interval_of_msg
// 1000 ms, size 256, qos 0, keepalive 300 s, clean true, limit 0.
var options = []*option{
	{short: 'h', long: "host", arg: "HOST[,HOST...]", def: "localhost", kinds: "csp",
		help: "broker host name(s) or IP address(es), comma-separated; clients are spread over them round-robin",
		set: func(o *Options, v string) error {
			hosts, err := splitList(v)
			if err != nil {
				return err
			}
			o.hosts = hosts
			return nil
		}},
	{short: 'p', long: "port", arg: "PORT", def: "1883", kinds: "csp",
		help: "broker port number",
		set:  func(o *Options, v string) error { return intIn(v, &o.port, 1, 65535) }},
	{short: 'V', long: "version", arg: "3|4|5", def: "5", kinds: "csp",
		help: "MQTT protocol version: 3 (3.1), 4 (3.1.1) or 5 (5.0)",
		set: func(o *Options, v string) error {
			if err := intIn(v, &o.version, 3, 5); err != nil {
				return errors.New("must be 3, 4 or 5, got " + strconv.Quote(v))
			}
			return nil
		}},
	{short: 'c', long: "count", arg: "N", def: "200", kinds: "csp",
		help: "number of clients",
		set:  func(o *Options, v string) error { return intIn(v, &o.count, 1, 1_000_000) }},
	{short: 'n', long: "startnumber", arg: "N", def: "0", kinds: "csp",
		help: "start number: clients are numbered N+1 ... N+count (%i); lets several instances avoid client id collisions",
		set:  func(o *Options, v string) error { return intIn(v, &o.startNumber, 0, 1<<31-2) }},
	{short: 'i', long: "interval", arg: "MS", def: "10", kinds: "csp",
		help: "milliseconds between two connections (0: all at once)",
		set:  func(o *Options, v string) error { return intIn(v, &o.interval, 0, 3_600_000) }},
	{short: 'R', long: "connrate", arg: "N", def: "0", kinds: "csp",
		help: "connections per second; 0 means use --interval",
		set:  func(o *Options, v string) error { return intIn(v, &o.connRate, 0, 1_000_000) }},
	{short: 'I', long: "interval_of_msg", arg: "MS", def: "1000", kinds: "p",
		help: "milliseconds between two messages of one client; 0: as fast as possible (publish.rate: max, each client's next message as soon as its -F window allows)",
		set:  func(o *Options, v string) error { return intIn(v, &o.msgInterval, 0, 3_600_000) }},
	{short: 'F', long: "inflight", arg: "N", def: "1", kinds: "p",
		help: fmt.Sprintf("with -I 0: the QoS 1/2 publishes one client keeps awaiting their acknowledgement (1 to %d; ignored at QoS 0, as emqtt-bench does)", plans.MaxInflight),
		set: func(o *Options, v string) error {
			o.hasInflight = true
			return intIn(v, &o.inflight, 1, plans.MaxInflight)
		}},
	{short: 'u', long: "username", arg: "NAME", kinds: "csp",
		help: "user name for CONNECT (taken literally, no placeholders)",
		set:  func(o *Options, v string) error { o.username = v; return nil }},
	{short: 'P', long: "password", arg: "PASSWORD", kinds: "csp",
		help: "password for CONNECT (never printed: --print-plan writes ${MQTT_PASSWORD} in its place)",
		set:  func(o *Options, v string) error { o.password, o.hasPassword = v, true; return nil }},
	{short: 't', long: "topic", arg: "TOPIC", kinds: "sp",
		help: "topic (pub) or topic filter (sub; repeat -t for several); %i client number, %c client id, %u user name",
		set:  func(o *Options, v string) error { o.topics = append(o.topics, v); return nil }},
	{short: 's', long: "size", arg: "BYTES", def: "256", kinds: "p",
		help: "payload size in bytes (at least 16: mqplan's measurement header)",
		set:  func(o *Options, v string) error { return intIn(v, &o.size, 0, 256<<20) }},
	{short: 'm', long: "message", arg: "TEXT", kinds: "p",
		help: "the payload, taken literally (-s then does not apply); the measurement header goes in an MQTT 5 user property (-V 5) or in 16 bytes before the text (-V 3, 4)",
		set: func(o *Options, v string) error {
			if strings.HasPrefix(v, "template://") {
				return errors.New("template://FILE is not supported: emqtt-bench's template placeholders are not mapped onto mqplan's; write a plan with publish.payload (docs/plan-format.md, \"Payloads\": %s sequence, %t time, %{int:LO:HI}, ...) and run it with mqplan run")
			}
			o.message, o.hasMessage = v, true
			return nil
		}},
	{short: 'q', long: "qos", arg: "0|1|2", def: "0", kinds: "sp",
		help: "QoS of the subscriptions (sub) or of the messages (pub)",
		set: func(o *Options, v string) error {
			if err := intIn(v, &o.qos, 0, 2); err != nil {
				return errors.New("must be 0, 1 or 2, got " + strconv.Quote(v))
			}
			return nil
		}},
	{short: 'r', long: "retain", def: "false", kinds: "p",
		help:    "publish with the retain flag",
		setBool: func(o *Options, v bool) { o.retain = v }},
	{short: 'k', long: "keepalive", arg: "SECONDS", def: "300", kinds: "csp",
		help: "keepalive in seconds (0: off)",
		set:  func(o *Options, v string) error { return intIn(v, &o.keepalive, 0, 65535) }},
	{short: 'C', long: "clean", def: "true", kinds: "csp",
		help:    "clean start (clean session in MQTT 3); -C false keeps sessions",
		setBool: func(o *Options, v bool) { o.clean = v }},
	{short: 'x', long: "session-expiry", arg: "SECONDS", def: "0", kinds: "csp",
		help: "MQTT 5 session expiry interval in seconds",
		set:  func(o *Options, v string) error { return intIn(v, &o.expiry, 0, 4294967295) }},
	{short: 'L', long: "limit", arg: "N", def: "0", kinds: "p",
		help: "messages to publish in all (over every client), then stop; 0 means no limit",
		set:  func(o *Options, v string) error { return intIn(v, &o.limit, 0, 1<<31-1) }},
	{short: 'S', long: "ssl", def: "false", kinds: "csp",
		help:    "connect with TLS (mqtts://, or wss:// with --ws)",
		setBool: func(o *Options, v bool) { o.ssl = v }},
	{long: "certfile", arg: "FILE", kinds: "csp",
		help: "client certificate (PEM) for mutual TLS, with --keyfile",
		set:  func(o *Options, v string) error { o.certFile = v; return nil }},
	{long: "keyfile", arg: "FILE", kinds: "csp",
		help: "client private key (PEM) for mutual TLS, with --certfile",
		set:  func(o *Options, v string) error { o.keyFile = v; return nil }},
	{long: "ws", def: "false", kinds: "csp",
		help:    "connect over WebSocket (ws://HOST:PORT/mqtt)",
		setBool: func(o *Options, v bool) { o.ws = v }},
	{long: "ifaddr", arg: "ADDR[,ADDR...]", kinds: "csp",
		help: "local source IP address(es), comma-separated, used round-robin per client",
		set: func(o *Options, v string) error {
			addrs, err := splitList(v)
			if err != nil {
				return err
			}
			o.ifaddrs = addrs
			return nil
		}},
	{long: "prefix", arg: "PREFIX", kinds: "csp",
		help: "client id prefix: ids are PREFIX_bench_<command>_<n> (default: mqplan's ids, unique per run)",
		set:  func(o *Options, v string) error { o.prefix = v; return nil }},
	{short: 'l', long: "lowmem", kinds: "csp",
		help:    "accepted for compatibility; no effect (mqplan's connections are lean already)",
		setBool: func(o *Options, v bool) {}},
	{long: "max-random-wait", arg: "MS", def: "0", kinds: "p",
		help: "each publisher waits a random time below this many ms (and at least --min-random-wait) before its first message; its messages then follow every -I ms (publish.start_delay, seeded)",
		set:  func(o *Options, v string) error { return intIn(v, &o.maxWait, 0, 3_600_000) }},
	{long: "min-random-wait", arg: "MS", def: "0", kinds: "p",
		help: "the shortest of those waits, in ms (alone, or not below --max-random-wait: every publisher waits exactly this)",
		set:  func(o *Options, v string) error { return intIn(v, &o.minWait, 0, 3_600_000) }},
	{short: 'w', long: "wait-before-publishing", kinds: "p",
		help:    "accepted for compatibility; mqplan always connects every client before publishing",
		setBool: func(o *Options, v bool) {}},

	{long: "cacertfile", arg: "FILE", kinds: "csp", ours: true,
		help: "CA certificate (PEM) to verify the broker's certificate with, for -S (default: the system's CAs)",
		set:  func(o *Options, v string) error { o.caFile = v; return nil }},
	{long: "insecure", kinds: "csp", ours: true,
		help:    "with -S, do not verify the broker's certificate (emqtt-bench does not verify it)",
		setBool: func(o *Options, v bool) { o.insecure = v }},
	{long: "duration", arg: "DURATION", kinds: "csp", ours: true,
		help: "stop after this long, e.g. 30s or 10m (default: run until Ctrl-C, at most 24h; pub with -L: until the limit is sent)",
		set: func(o *Options, v string) error {
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil || d <= 0 {
				return fmt.Errorf("must be a positive duration like 30s or 10m, got %q", v)
			}
			o.duration, o.hasDuration = d, true
			return nil
		}},
	{long: "threshold", arg: "EXPR", kinds: "csp", ours: true,
		help: "a pass condition, as in a plan's thresholds (repeatable), e.g. --threshold 'p99 < 50ms'",
		set:  func(o *Options, v string) error { o.thresholds = append(o.thresholds, v); return nil }},
	{long: "allow-empty", kinds: "s", ours: true,
		help:    "pass when no message arrives (by default a sub that received nothing fails: received > 0 is a built-in check); the plan gets the threshold received >= 0",
		setBool: func(o *Options, v bool) { o.allowEmpty = v }},
	{long: "out", arg: "FORMAT=FILE", kinds: "csp", ours: true, output: true,
		help: "also write the result as FORMAT (json, table, junit, md, csv, html) to FILE (- for standard output); repeatable, as in mqplan run",
		set:  func(o *Options, v string) error { o.outs = append(o.outs, v); return nil }},
	{long: "json", arg: "FILE", kinds: "csp", ours: true, output: true,
		help: "write the full result as JSON to FILE (the same as --out json=FILE)",
		set:  func(o *Options, v string) error { o.jsons = append(o.jsons, v); return nil }},
	{long: "metrics-listen", arg: "ADDR", kinds: "csp", ours: true, output: true,
		help: "serve live Prometheus metrics on http://ADDR/metrics while the run goes, e.g. :9464 (a bare :PORT is 127.0.0.1:PORT); what emqtt-bench's --prometheus gives",
		set:  func(o *Options, v string) error { o.metricsListen = v; return nil }},
	{long: "baseline", arg: "FILE", kinds: "csp", ours: true, output: true,
		help: "a saved JSON result of an earlier run that --threshold reads as baseline.*, e.g. --threshold 'p99 <= baseline.p99 * 1.10'; the report compares the two",
		set: func(o *Options, v string) error {
			if v == "" {
				return errors.New("want a saved result's file name, got an empty one")
			}
			o.baseline = v
			return nil
		}},
	{long: "label", arg: "NAME", kinds: "csp", ours: true, output: true,
		help: "name this run among others (the broker a CI matrix job tests, e.g. emqx-5.8) in every output, as in mqplan run",
		set: func(o *Options, v string) error {
			if v == "" {
				return errors.New("want a name, e.g. --label emqx-5.8")
			}
			o.label = v
			return nil
		}},
	{long: "print-plan", kinds: "csp", ours: true,
		help:    "print the plan these options make, as YAML, instead of running it (save it to run it with mqplan run)",
		setBool: func(o *Options, v bool) { o.printPlan = v }},
	{long: "help", kinds: "csp", ours: true,
		help:    "show this help (-h is the host, as in emqtt-bench)",
		setBool: func(o *Options, v bool) { o.help = v }},
}

// unsupported are emqtt-bench options mqplan knows but does not
// offer, with the reason, so a migrating user learns why instead of
// reading "unknown option".
var unsupported = []struct {
	short byte
	long  string
	why   string
}{
	{0, "topics-payload", "a file of topics each with its own payload and interval: write a plan with a group per topic, each with its publish.payload"},
	{0, "payload-hdrs", "mqplan always measures latency, loss, duplicates and order from its own header"},
	{'Q', "qoe", "mqplan always reports connect and subscribe latency (connect.*, subscribe.* in the report and thresholds)"},
	{0, "num-retry-connect", "a plan's groups[].reconnect reconnects dropped clients; failed connects are reported, not retried"},
	{0, "quic", "mqplan connects over TCP, TLS and WebSocket only"},
	{0, "load-qst", "mqplan connects over TCP, TLS and WebSocket only"},
	{'d', "dist", "there is no Erlang distribution in mqplan"},
	{0, "shortids", "use --prefix for predictable client ids"},
	{0, "log_to", "mqplan prints per-second lines and the report on stdout, notices on stderr"},
	{0, "force-major-gc-interval", "mqplan has no per-client garbage collection to tune"},
	{0, "reconnect", "write a plan whose group has reconnect: {after: 1s, max: N} and run it with mqplan run: the plan says how long to wait between attempts, which this command line cannot"},
	{0, "keep-connected", "write a plan whose group has reconnect: {after: 1s, max: 0} (0: no limit) and run it with mqplan run"},
	{0, "retry-interval", "mqplan does not resend an unacknowledged QoS 1/2 publish on a live connection (MQTT 5 forbids it; a resend belongs to a reconnect); one still unacknowledged at the end is counted in in_flight_at_end and lost_unacked"},
	{0, "prometheus", "use --metrics-listen ADDR: mqplan serves its live metrics at http://ADDR/metrics for Prometheus to scrape"},
	{0, "restapi", "mqplan takes no commands while it runs: a load that changes is a plan with stages (docs/plan-format.md), and Ctrl-C ends the run with its report"},
	{0, "ssl-version", "mqplan's TLS (Go's crypto/tls) negotiates TLS 1.2 or 1.3 with the broker; no older version is offered and the choice is not configurable"},
	{0, "ciphers", "mqplan's TLS (Go's crypto/tls) chooses among its secure cipher suites itself; the list is not configurable"},
}

// defaults are emqtt-bench's defaults.
func defaults(kind Kind) *Options {
	return &Options{
		kind:        kind,
		hosts:       []string{"localhost"},
		port:        1883,
		version:     5,
		count:       200,
		startNumber: 0,
		interval:    10,
		msgInterval: 1000,
		inflight:    1,
		size:        256,
		keepalive:   300,
		clean:       true,
	}
}

// Parse parses a command line of kind (the arguments after the command's
// name). Every error is a command-line problem naming the option.
func Parse(kind Kind, args []string) (*Options, error) {
	o := defaults(kind)
	shown := []string{"mqplan", string(kind)}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return nil, fmt.Errorf("unexpected argument %q: %s takes options only", args[i+1], kind)
			}
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			opt, err := lookupLong(kind, name)
			if err != nil {
				return nil, err
			}
			if opt.arg == "" {
				b := true
				if hasVal {
					v, ok := parseGetoptBool(val)
					if !ok {
						return nil, fmt.Errorf("%s: must be true or false, got %q", opt.names(), val)
					}
					b = v
				}
				toks := []string{a}
				if !hasVal && i+1 < len(args) {
					if v, ok := parseGetoptBool(args[i+1]); ok {
						b = v
						i++
						toks = append(toks, args[i])
					}
				}
				opt.setBool(o, b)
				if opt.long != "print-plan" { // the plan does not print itself
					shown = append(shown, toks...)
				}
				continue
			}
			if !hasVal {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("%s needs a value (%s)", opt.names(), opt.arg)
				}
				i++
				val = args[i]
				if !opt.output {
					shown = append(shown, a, shownValue(opt, val))
				}
			} else if !opt.output {
				shown = append(shown, "--"+name+"="+shownValue(opt, val))
			}
			if err := opt.set(o, val); err != nil {
				return nil, fmt.Errorf("%s: %w", opt.names(), err)
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			opt, err := lookupShort(kind, a[1])
			if err != nil {
				return nil, err
			}
			rest := a[2:]
			if opt.arg == "" {
				if err := setShortBools(kind, o, opt, rest, args, &i, &shown); err != nil {
					return nil, err
				}
				continue
			}
			val := rest
			if val == "" {
				if i+1 >= len(args) {
					hint := ""
					if opt.short == 'h' {
						hint = "; help is --help"
					}
					return nil, fmt.Errorf("%s needs a value (%s)%s", opt.names(), opt.arg, hint)
				}
				i++
				val = args[i]
				shown = append(shown, a, shownValue(opt, val))
			} else {
				shown = append(shown, "-"+string(opt.short)+shownValue(opt, val))
			}
			if err := opt.set(o, val); err != nil {
				return nil, fmt.Errorf("%s: %w", opt.names(), err)
			}
		default:
			return nil, fmt.Errorf("unexpected argument %q: %s takes options only (see mqplan %s --help)", a, kind, kind)
		}
	}
	o.commandLine = shellJoin(shown)
	if o.help {
		return o, nil
	}
	return o, o.check()
}

// setShortBools handles -X for a boolean X: alone (true, or the explicit
// value that follows: -C false), with an attached value (-Cfalse), or
// clumped with other boolean options (-rS).
func setShortBools(kind Kind, o *Options, opt *option, rest string, args []string, i *int, shown *[]string) error {
	a := "-" + string(opt.short) + rest
	*shown = append(*shown, a)
	switch {
	case rest == "":
		b := true
		if *i+1 < len(args) {
			if v, ok := parseGetoptBool(args[*i+1]); ok {
				b = v
				*i++
				*shown = append(*shown, args[*i])
			}
		}
		opt.setBool(o, b)
	default:
		if v, ok := parseGetoptBool(rest); ok && !isShortClump(kind, rest) {
			opt.setBool(o, v)
			break
		}
		opt.setBool(o, true)
		for j := 0; j < len(rest); j++ {
			other, err := lookupShort(kind, rest[j])
			if err != nil {
				return err
			}
			if other.arg != "" {
				// Quote the clump only up to the letter: what follows
				// may be its value, a password for -P.
				return fmt.Errorf("%s takes a value (%s), so it cannot be combined in %q; write it separately", other.names(), other.arg, a[:2+j+1])
			}
			other.setBool(o, true)
		}
	}
	return nil
}

// isShortClump reports whether every letter of s is a boolean short option.
func isShortClump(kind Kind, s string) bool {
	for j := 0; j < len(s); j++ {
		opt, err := lookupShort(kind, s[j])
		if err != nil || opt.arg != "" {
			return false
		}
	}
	return true
}

// shownValue is how a value appears in the recorded command line: the
// password is masked.
func shownValue(opt *option, v string) string {
	if opt.long == "password" {
		return "***"
	}
	return v
}

// lookupLong finds --name; emqtt-bench mixes interval_of_msg and
// session-expiry, so - and _ are interchangeable.
func lookupLong(kind Kind, name string) (*option, error) {
	norm := func(s string) string { return strings.ReplaceAll(s, "_", "-") }
	for _, opt := range options {
		if norm(opt.long) == norm(name) {
			if !opt.takes(kind) {
				return nil, notForKind(kind, opt)
			}
			return opt, nil
		}
	}
	for _, u := range unsupported {
		if norm(u.long) == norm(name) {
			return nil, fmt.Errorf("emqtt-bench's --%s is not supported: %s", u.long, u.why)
		}
	}
	msg := fmt.Sprintf("unknown option --%s", name)
	if s := suggestLong(kind, name); s != "" {
		msg += fmt.Sprintf("; did you mean --%s?", s)
	}
	return nil, fmt.Errorf("%s (see mqplan %s --help)", msg, kind)
}

// lookupShort finds -c.
func lookupShort(kind Kind, c byte) (*option, error) {
	for _, opt := range options {
		if opt.short == c {
			if !opt.takes(kind) {
				return nil, notForKind(kind, opt)
			}
			return opt, nil
		}
	}
	for _, u := range unsupported {
		if u.short != 0 && u.short == c {
			return nil, fmt.Errorf("emqtt-bench's -%c/--%s is not supported: %s", c, u.long, u.why)
		}
	}
	return nil, fmt.Errorf("unknown option -%c (see mqplan %s --help; help itself is --help, since -h is the host)", c, kind)
}

// notForKind explains an option of another command.
func notForKind(kind Kind, opt *option) error {
	var others []string
	for _, k := range []Kind{Conn, Sub, Pub} {
		if opt.takes(k) {
			others = append(others, string(k))
		}
	}
	return fmt.Errorf("%s is not an option of %s (it is for %s)", opt.names(), kind, strings.Join(others, " and "))
}

// suggestLong returns the long option closest to name, or "".
func suggestLong(kind Kind, name string) string {
	var known []string
	for _, opt := range options {
		if opt.takes(kind) {
			known = append(known, opt.long)
		}
	}
	return suggest.Closest(strings.ToLower(name), known, maxSuggestDistance, suggest.First)
}

// maxSuggestDistance is how far a misspelt long option may be from the
// one suggested: emqtt-bench's options are long words, so two edits (a
// transposition counts one) still name the option meant.
const maxSuggestDistance = 2

// parseGetoptBool reads the boolean words getopt accepts.
func parseGetoptBool(s string) (v, ok bool) {
	switch strings.ToLower(s) {
	case "true", "t", "yes", "y", "on", "enabled", "1":
		return true, true
	case "false", "f", "no", "n", "off", "disabled", "0":
		return false, true
	}
	return false, false
}

// intIn parses a whole number in [lo, hi].
func intIn(v string, dst *int, lo, hi int) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	switch {
	case err != nil:
		return fmt.Errorf("must be a whole number, got %q", v)
	case n < lo:
		return fmt.Errorf("must be at least %d, got %d", lo, n)
	case n > hi:
		return fmt.Errorf("must be at most %d, got %d", hi, n)
	}
	*dst = n
	return nil
}

// splitList splits a comma-separated list, refusing empty items.
func splitList(v string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, fmt.Errorf("has an empty item in %q: write a,b,c", v)
		}
		out = append(out, s)
	}
	return out, nil
}

// randomWait is emqtt-bench's wait before a publisher's first message as
// a start delay range in ms: uniform below max and at least min, or
// exactly min when max is not above it (emqtt-bench's
// random_pub_wait_period); false when there is no wait.
func (o *Options) randomWait() (lo, hi int, ok bool) {
	switch {
	case o.maxWait > o.minWait:
		return o.minWait, o.maxWait, true
	case o.minWait > 0:
		return o.minWait, o.minWait, true
	}
	return 0, 0, false
}

// check validates what the options say together.
func (o *Options) check() error {
	switch o.kind {
	case Sub, Pub:
		if len(o.topics) == 0 {
			return fmt.Errorf("-t/--topic is required: say which topic %s", map[Kind]string{Sub: "filter to subscribe to", Pub: "to publish to"}[o.kind])
		}
	}
	if o.kind == Pub && len(o.topics) > 1 {
		return fmt.Errorf("-t/--topic is given %d times: pub publishes to one topic (use %%i for one per client)", len(o.topics))
	}
	if _, _, ok := o.randomWait(); ok && o.kind == Pub && o.msgInterval == 0 {
		return errors.New("--min-random-wait/--max-random-wait are not supported with -I 0: mqplan's closed loop (publish.rate: max) starts every publisher at once, with no timetable to delay; use -I N")
	}
	if (o.certFile == "") != (o.keyFile == "") {
		return errors.New("--certfile and --keyfile go together: mutual TLS needs the certificate and its private key")
	}
	if o.certFile != "" && !o.ssl {
		return errors.New("--certfile and --keyfile need -S/--ssl: the client certificate is sent over TLS")
	}
	if (o.caFile != "" || o.insecure) && !o.ssl {
		return errors.New("--cacertfile and --insecure need -S/--ssl: they say how to verify the broker's TLS certificate")
	}
	return nil
}

// shellJoin quotes words for a shell where needed, so the recorded command
// line can be pasted back.
func shellJoin(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(shellQuote(w))
	}
	return b.String()
}

func shellQuote(w string) string {
	if w == "" {
		return "''"
	}
	safe := true
	for _, c := range w {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=,@%+", c)) {
			safe = false
			break
		}
	}
	if safe {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
