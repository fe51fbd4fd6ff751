package emqttbench

import (
	"errors"
	"fmt"
	"github.com/mqplan/mqplan/internal/brokerurl"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/plans"
)

// PlanFile is the name the generated plan is loaded under: it is what
// positions in plan errors would show, had an option not been named.
const PlanFile = "<command line>"

// PasswordVar is the environment variable the generated plan reads
// the password from, so that the password never appears in --print-plan's
// output; for a run, -P's value is handed to the loader under this name.
const PasswordVar = "MQTT_PASSWORD"

// defaultDuration is the steady phase when neither --duration nor
// -L ends the run: emqtt-bench runs until it is stopped, and a plan needs a
// length, so the run lasts a day unless Ctrl-C ends it first. (A day keeps
// the per-second timeline at 86,400 entries.)
const defaultDuration = 24 * time.Hour

// allowEmptyThreshold is the threshold --allow-empty writes: it holds
// whatever arrived, and, reading received, it stands in for the built-in
// check received > 0 that fails a sub that heard nothing.
const allowEmptyThreshold = "received >= 0"

// Plan is a command line compiled into a plan.
type Plan struct {
	// Text is the plan as YAML: what --print-plan prints, and what a user
	// could save and run with `mqplan run`. It never holds the password
	// (it reads ${MQTT_PASSWORD}).
	Text string
	// Program is Text loaded and compiled, -P's value standing for
	// ${MQTT_PASSWORD}.
	Program *plans.Program
	// Notes tell the user how the options became the plan (a limit
	// spread over the clients), one line each, before the plan runs or
	// is printed.
	Notes []string
	// PrintNotes follow the printed plan (--print-plan): what its reader
	// must know to run it.
	PrintNotes []string
}

// Compile compiles the options into a plan and loads it; runID makes the
// default client ids unique per run (plans.CompileOptions.RunID). Every
// error is a command-line problem that names the option at fault.
func (o *Options) Compile(runID string) (*Plan, error) {
	text, err := o.planYAML()
	if err != nil {
		return nil, err
	}
	prog, err := o.load(text, runID)
	if err != nil {
		return nil, err
	}
	p := &Plan{Text: text, Program: prog}
	if n := o.perClientLimit(); n > 0 && n*o.count != o.limit {
		p.Notes = append(p.Notes, fmt.Sprintf("-L %d is a limit over all %d clients; a plan's limit is per client, so each sends %d (%d in all)",
			o.limit, o.count, n, n*o.count))
	}
	if o.hasInflight && o.msgInterval > 0 {
		// emqtt-bench's -F sizes the window of every publisher; mqplan's
		// open loop publishes on its schedule with its own window.
		p.Notes = append(p.Notes, fmt.Sprintf("-F %d is the window of the closed loop (-I 0): with -I %d mqplan publishes on its schedule, with its own in-flight window (up to 256), so -F has no effect", o.inflight, o.msgInterval))
	}
	if o.hasInflight && o.msgInterval == 0 && o.qos == 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("-F %d counts QoS 1/2 publishes: at QoS 0 it has no effect, as in emqtt-bench (each client writes its next message as soon as the previous write returned)", o.inflight))
	}
	if o.printPlan && o.hasPassword {
		p.PrintNotes = append(p.PrintNotes, "the password is not written in the plan; it reads it from the environment variable "+PasswordVar)
	}
	return p, nil
}

// planYAML compiles the options into plan text: the same plan a user could
// write by hand, loaded and run the same way.
func (o *Options) planYAML() (string, error) {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("name: %s\n", o.kind)
	w("description: %s\n", yamlQuote(envEscape(o.commandLine)))

	urls, err := o.brokerURLs()
	if err != nil {
		return "", err
	}
	w("broker:\n")
	if len(urls) == 1 {
		w("  url: %s\n", yamlQuote(urls[0]))
	} else {
		w("  urls:\n")
		for _, u := range urls {
			w("    - %s\n", yamlQuote(u))
		}
	}
	w("  protocol: %d\n", o.version)
	if o.caFile != "" || o.certFile != "" || o.insecure {
		// Paths are written absolute: a saved plan resolves relative paths
		// against its own directory, not the one the command ran in.
		w("  tls:\n")
		for _, f := range []struct{ key, opt, path string }{
			{"ca", "--cacertfile", o.caFile}, {"cert", "--certfile", o.certFile}, {"key", "--keyfile", o.keyFile},
		} {
			if f.path == "" {
				continue
			}
			abs, err := filepath.Abs(f.path)
			if err != nil {
				return "", fmt.Errorf("%s: %w", f.opt, err)
			}
			w("    %s: %s\n", f.key, yamlQuote(envEscape(abs)))
		}
		if o.insecure {
			w("    insecure_skip_verify: true\n")
		}
	}
	if len(o.ifaddrs) > 0 {
		w("  source_addresses:\n")
		for _, a := range o.ifaddrs {
			w("    - %s\n", yamlQuote(envEscape(a)))
		}
	}

	w("groups:\n")
	w("  - name: %s\n", o.kind)
	w("    count: %d\n", o.count)
	// emqtt-bench numbers its clients startnumber+1 ... startnumber+count.
	w("    start: %d\n", o.startNumber+1)
	if o.prefix != "" {
		w("    client_id: %s\n", yamlQuote(envEscape(templateEscape(o.prefix))+"_bench_"+string(o.kind)+"_%i"))
	}
	if o.username != "" {
		w("    username: %s\n", yamlQuote(envEscape(templateEscape(o.username))))
	}
	if o.hasPassword {
		w("    password: ${%s}\n", PasswordVar)
	}
	w("    keepalive: %ds\n", o.keepalive)
	w("    clean_start: %t\n", o.clean)
	if o.expiry > 0 {
		w("    session_expiry: %ds\n", o.expiry)
	}
	switch {
	case o.connRate > 0:
		w("    connect_rate: %d/s\n", o.connRate)
	case o.interval == 0:
		w("    connect_rate: 0/s\n") // all at once
	default:
		w("    connect_every: %dms\n", o.interval)
	}
	switch o.kind {
	case Sub:
		w("    subscribe:\n")
		for _, t := range o.topics {
			w("      - topic: %s\n        qos: %d\n", yamlQuote(envEscape(topicTemplate(t))), o.qos)
		}
	case Pub:
		w("    publish:\n")
		w("      topic: %s\n", yamlQuote(envEscape(topicTemplate(o.topics[0]))))
		w("      qos: %d\n", o.qos)
		if o.hasMessage {
			// The text as the payload, checked byte for byte on receipt;
			// the header where it leaves the text alone, if it can.
			w("      payload: %s\n", yamlQuote(envEscape(templateEscape(o.message))))
			if o.version == 5 {
				w("      header: property\n")
			} else {
				w("      header: prefix\n")
			}
		} else {
			w("      size: %d\n", o.size)
		}
		if o.msgInterval == 0 {
			w("      rate: max\n")
			if o.qos > 0 {
				w("      inflight: %d\n", o.inflight)
			}
		} else {
			w("      every: %dms\n", o.msgInterval)
			if lo, hi, ok := o.randomWait(); ok {
				w("      start_delay: {min: %dms, max: %dms}\n", lo, hi)
			}
		}
		w("      retain: %t\n", o.retain)
		if n := o.perClientLimit(); n > 0 {
			w("      count: %d\n", n)
		}
	}
	switch {
	case o.hasDuration:
		w("duration: %s\n", shortDuration(o.duration))
	case o.kind == Pub && o.limit > 0 && o.msgInterval > 0:
		// No duration: the run ends when every client has sent its count.
	default:
		w("duration: %s\n", shortDuration(defaultDuration))
	}
	if len(o.thresholds) > 0 || o.allowEmpty {
		w("thresholds:\n")
		for _, t := range o.thresholds {
			w("  - %s\n", yamlQuote(envEscape(t)))
		}
		if o.allowEmpty {
			// After the user's, so that thresholds[i] stays --threshold's
			// i-th. A threshold on received replaces the built-in
			// received > 0 of a plan that only listens.
			w("  - %s # --allow-empty: receiving nothing passes\n", yamlQuote(allowEmptyThreshold))
		}
	}
	return b.String(), nil
}

// perClientLimit splits -L, emqtt-bench's limit on messages over all
// clients, into the plan's per-client publish.count: rounded up, so at
// least the limit is sent (exactly it when count divides it).
func (o *Options) perClientLimit() int {
	if o.limit <= 0 {
		return 0
	}
	return (o.limit + o.count - 1) / o.count
}

// brokerURLs is one URL per -h host: mqtt://, mqtts:// with -S, ws://
// with --ws and wss:// with both; WebSocket URLs use emqtt's path /mqtt.
func (o *Options) brokerURLs() ([]string, error) {
	scheme, path := brokerurl.For(o.ssl, o.ws), ""
	if scheme.WebSocket {
		path = brokerurl.DefaultWebSocketPath
	}
	var urls []string
	for _, h := range o.hosts {
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		if strings.ContainsAny(h, "/@?# ") {
			return nil, fmt.Errorf("-h/--host: %q is not a host name or IP address", redactHost(h))
		}
		urls = append(urls, scheme.Name+"://"+net.JoinHostPort(h, strconv.Itoa(o.port))+path)
	}
	return urls, nil
}

// redactHost hides the password of a host written user:password@host,
// which is not a host but may well hold a real password: bob:***@host.
// (Credentials go in -u and -P.)
func redactHost(h string) string {
	at := strings.LastIndexByte(h, '@')
	if at < 0 {
		return h
	}
	if colon := strings.IndexByte(h[:at], ':'); colon >= 0 {
		return h[:colon+1] + "***" + h[at:]
	}
	return h
}

// topicTemplate turns an emqtt-bench topic into a plan template: %i, %c and
// %u are placeholders in both, and every other % is literal in
// emqtt-bench, so it is written %% here.
func topicTemplate(t string) string {
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		if t[i] == '%' {
			if i+1 < len(t) && strings.IndexByte("icu", t[i+1]) >= 0 {
				b.WriteString(t[i : i+2])
				i++
				continue
			}
			b.WriteString("%%")
			continue
		}
		b.WriteByte(t[i])
	}
	return b.String()
}

// templateEscape makes s literal in a plan template (user names and the
// client id prefix are not templates in emqtt-bench).
func templateEscape(s string) string { return strings.ReplaceAll(s, "%", "%%") }

// envEscape makes s literal under the plan's ${VAR} expansion: a $ before
// { or $ is doubled, any other $ (as in $share/ or $SYS/) stays as it is.
func envEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if s[i] == '$' && i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '$') {
			b.WriteByte('$')
		}
	}
	return b.String()
}

// yamlQuote writes s as a YAML double-quoted scalar. Go's escapes (\n, \t,
// \", \\, \xNN, \uNNNN, \UNNNNNNNN, \a, \b, \f, \v, \r) are all YAML escapes too.
func yamlQuote(s string) string { return strconv.Quote(s) }

// load loads the generated plan text with every check of the plan
// language, handing -P's value to the loader as ${MQTT_PASSWORD}. Problems
// are reported against the options that caused them.
func (o *Options) load(text, runID string) (*plans.Program, error) {
	lookup := func(name string) (string, bool) {
		if name == PasswordVar && o.hasPassword {
			return o.password, true
		}
		return "", false
	}
	// --print-plan may write a plan for another machine: its files are
	// checked where it runs.
	plan, err := plans.LoadBytes(PlanFile, []byte(text), plans.LoadOptions{LookupEnv: lookup, CheckFiles: !o.printPlan})
	if err == nil {
		var prog *plans.Program
		prog, err = plans.Compile(plan, plans.CompileOptions{RunID: runID})
		if err == nil {
			return prog, nil
		}
	}
	return nil, o.explainPlanError(err)
}

// planPaths maps plan paths to the options that set them.
var planPaths = []struct {
	re  *regexp.Regexp
	opt string
}{
	{regexp.MustCompile(`^broker\.urls?(\[\d+\])?$`), "-h/--host, -p/--port"},
	{regexp.MustCompile(`^broker\.protocol$`), "-V/--version"},
	{regexp.MustCompile(`^broker\.tls\.ca$`), "--cacertfile"},
	{regexp.MustCompile(`^broker\.tls\.cert$`), "--certfile"},
	{regexp.MustCompile(`^broker\.tls\.key$`), "--keyfile"},
	{regexp.MustCompile(`^broker\.source_addresses(\[\d+\])?$`), "--ifaddr"},
	{regexp.MustCompile(`^groups\[0\]\.count$`), "-c/--count"},
	{regexp.MustCompile(`^groups\[0\]\.start$`), "-n/--startnumber"},
	{regexp.MustCompile(`^groups\[0\]\.client_id$`), "--prefix"},
	{regexp.MustCompile(`^groups\[0\]\.username$`), "-u/--username"},
	{regexp.MustCompile(`^groups\[0\]\.password$`), "-P/--password"},
	{regexp.MustCompile(`^groups\[0\]\.keepalive$`), "-k/--keepalive"},
	{regexp.MustCompile(`^groups\[0\]\.session_expiry$`), "-x/--session-expiry"},
	{regexp.MustCompile(`^groups\[0\]\.connect_every$`), "-i/--interval"},
	{regexp.MustCompile(`^groups\[0\]\.connect_rate$`), "-R/--connrate"},
	{regexp.MustCompile(`^groups\[0\]\.subscribe(\[\d+\])?(\.topic)?$`), "-t/--topic"},
	{regexp.MustCompile(`^groups\[0\]\.subscribe(\[\d+\])?\.qos$`), "-q/--qos"},
	{regexp.MustCompile(`^groups\[0\]\.publish\.topic$`), "-t/--topic"},
	{regexp.MustCompile(`^groups\[0\]\.publish\.qos$`), "-q/--qos"},
	{regexp.MustCompile(`^groups\[0\]\.publish\.size$`), "-s/--size"},
	{regexp.MustCompile(`^groups\[0\]\.publish\.(payload|header)$`), "-m/--message"},
	{regexp.MustCompile(`^groups\[0\]\.publish\.every$`), "-I/--interval_of_msg"},
	{regexp.MustCompile(`^groups\[0\]\.publish\.rate$`), "-I/--interval_of_msg"},
	{regexp.MustCompile(`^groups\[0\]\.publish\.inflight$`), "-F/--inflight"},
	{regexp.MustCompile(`^groups\[0\]\.publish\.start_delay(\.min|\.max)?$`), "--min-random-wait/--max-random-wait"},
	{regexp.MustCompile(`^groups\[0\]\.publish\.count$`), "-L/--limit"},
	{regexp.MustCompile(`^duration$`), "--duration"},
}

var thresholdPathRE = regexp.MustCompile(`^thresholds\[(\d+)\]$`)

// explainPlanError rewrites plan problems as option problems: a user who
// wrote options should not have to read positions in YAML they never saw.
// A problem no option explains (there should be none) keeps its plan path
// and points at --print-plan.
func (o *Options) explainPlanError(err error) error {
	var es plans.Errors
	if !errors.As(err, &es) {
		return err
	}
	var lines []string
	for _, e := range es {
		lines = append(lines, o.optionMessage(e))
	}
	return errors.New(strings.Join(lines, "\n"))
}

func (o *Options) optionMessage(e *plans.Error) string {
	if m := thresholdPathRE.FindStringSubmatch(e.Path); m != nil {
		k, _ := strconv.Atoi(m[1])
		if k < len(o.thresholds) {
			return fmt.Sprintf("--threshold %q: %s", o.thresholds[k], e.Msg)
		}
	}
	for _, p := range planPaths {
		if p.re.MatchString(e.Path) {
			return p.opt + ": " + e.Msg
		}
	}
	return fmt.Sprintf("%s (in the plan the options make; --print-plan shows it)", e.Error())
}

// shortDuration writes d as Go does, without its zero minutes and seconds:
// 24h, 1h30m, 2m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
