package plans

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mqplan/mqplan/internal/brokerurl"
	"github.com/mqplan/mqplan/internal/suggest"
	"github.com/mqplan/mqplan/internal/yamlnode"
)

// The keys of each section come from the field catalogue (fields.go).

// Defaults and limits of the plan format (plan-format.md). Each is
// documented where the plan's types are, and pinned by the loader tests.
const (
	defDrain          = 5 * time.Second  // drain: wait for late deliveries
	defProtocol       = 5                // broker.protocol: MQTT 5.0
	defConnectTimeout = 10 * time.Second // broker.connect_timeout
	defGroupCount     = 1                // groups[].count
	defGroupStart     = 1                // groups[].start: the first %i
	defKeepalive      = 60 * time.Second // groups[].keepalive
	defConnectRate    = 1000.0           // groups[].connect_rate, connections per second
	defReconnectAfter = time.Second      // groups[].reconnect.after
	defPayloadSize    = 256              // groups[].publish.size, bytes

	maxGroupCount    = maxPlanClients           // clients in one group
	maxGroupStart    = math.MaxInt32            // keeps start+count-1 inside an int32 %i
	maxKeepalive     = 65535 * time.Second      // the MQTT keepalive field is 16 bits of seconds
	maxSessionExpiry = 4294967295 * time.Second // the MQTT 5 property is 32 bits of seconds
	maxPayloadSize   = 256 << 20                // the MQTT packet limit is 256 MiB
	maxPID           = 1 << 22                  // Linux's highest pid_max (PID_MAX_LIMIT)
	maxProcessName   = 255                      // broker.metrics.process: comm is 15 bytes, a name longer than this is a mistake
	minPlanRate      = 1.0 / 3600               // one per hour: slower rates overflow intervals
)

// Values that plan text is expected to hold, for "must be X, got Y".
const (
	wantString         = "a string"
	wantInt            = "a whole number"
	wantBool           = "true or false"
	wantDuration       = "a duration like 10s"
	wantRate           = "a rate like 500/s, 60/min or 2/ms"
	wantSize           = "a size like 1KB, 512B or 1024"
	wantQoS            = "0, 1 or 2"
	wantProtocol       = "3 (MQTT 3.1), 4 (MQTT 3.1.1) or 5 (MQTT 5.0)"
	wantRetainHandling = "0 (send retained messages at every subscribe), 1 (only for a new subscription) or 2 (never)"
)

// loadGroupNameRE is what a group name may hold: it appears in paths,
// thresholds (groups.<name>) and --set keys.
var loadGroupNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// keyEntry is one key of a mapping with its value and the value's path.
type keyEntry struct {
	key, val *yaml.Node
	path     string
}

// section is a mapping checked against its schema: unknown and duplicate
// keys are reported once, when it is made; the typed getters report bad
// values and leave the destination (holding its default) alone.
type keySection struct {
	l      *loader
	path   string
	node   *yaml.Node
	fields map[string]keyEntry
	// meant maps a known key to the unknown key that was suggested as
	// it, for missingAt.
	meant map[string]*yaml.Node
}

// section checks mapping n against its known keys. A null n (a key with
// nothing under it) is an empty section. With extensions, keys starting
// with "x-" are ignored: a place for anchors that other keys alias.
func (l *loader) section(path string, n *yaml.Node, known []string, extensions bool) *keySection {
	s := &keySection{l: l, path: path, node: n, fields: map[string]keyEntry{}}
	if yamlnode.IsNull(n) {
		return s
	}
	if n.Kind != yaml.MappingNode {
		l.errorf(n, path, "must be a mapping with keys like %s; got %s", strings.Join(known, ", "), describeNode(n))
		return s
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			l.errorf(k, path, "a key must be a name, got %s", describeNode(k))
			continue
		}
		name := k.Value
		if extensions && strings.HasPrefix(name, "x-") {
			continue
		}
		if !slices.Contains(known, name) {
			if h, ok := habitOf(path, name); ok {
				l.errorf(k, path, "unknown key %s: %s", quoteValue(name), h.hint)
				s.note(h.meant, k)
			} else if hint := suggestKey(name, known); hint != "" {
				s.note(hint, k)
				l.errorf(k, path, "unknown key %s (did you mean %q?)", quoteValue(name), hint)
			} else {
				l.errorf(k, path, "unknown key %s (known keys: %s)", quoteValue(name), strings.Join(known, ", "))
			}
			continue
		}
		if first, dup := s.fields[name]; dup {
			where := ""
			switch {
			case first.key.Line == k.Line && k.Line > 0:
				where = fmt.Sprintf(" (first at column %d)", first.key.Column)
			case first.key.Line > 0:
				where = fmt.Sprintf(" (first at line %d)", first.key.Line)
			}
			l.errorf(k, path, "duplicate key %q%s", name, where)
			continue
		}
		s.fields[name] = keyEntry{key: k, val: v, path: l.at(planChildPath(path, name), v)}
	}
	return s
}

// note records that the unknown key k was taken for meant.
func (s *keySection) note(meant string, k *yaml.Node) {
	if s.meant == nil {
		s.meant = map[string]*yaml.Node{}
	}
	if _, ok := s.meant[meant]; !ok && meant != "" {
		s.meant[meant] = k
	}
}

// get returns the entry for key. Callers treat a null value as absent
// for sections (broker:, will:, ...) but not for typed scalars, whose
// getters report "got nothing".
func (s *keySection) get(key string) (keyEntry, bool) {
	e, ok := s.fields[key]
	return e, ok
}

// laterEntry returns whichever of two entries comes later in the text,
// the one a "not both" problem is reported at.
func laterEntry(a, b keyEntry) keyEntry {
	if b.key.Line > a.key.Line || b.key.Line == a.key.Line && b.key.Column > a.key.Column || b.key.Line == 0 {
		return b
	}
	return a
}

// text returns the scalar at e after ${VAR} expansion. null reports a
// YAML null (an empty value); ok is false, with the problem recorded, when
// the value is not a scalar or does not expand.
func (l *loader) text(e keyEntry, want string) (s string, null, ok bool) {
	if e.val.Kind != yaml.ScalarNode {
		l.errorf(e.val, e.path, "must be %s, got %s", want, describeNode(e.val))
		return "", false, false
	}
	if yamlnode.IsNull(e.val) {
		return "", true, true
	}
	s, err := expandEnvVars(e.val.Value, l.lookup)
	if err != nil {
		l.errorf(e.val, e.path, "%v", err)
		return "", false, false
	}
	return s, false, true
}

// value is text for a typed scalar: null is a problem, since an empty
// value cannot mean a number.
func (l *loader) value(e keyEntry, want string) (string, bool) {
	s, null, ok := l.text(e, want)
	if ok && null {
		l.errorf(e.val, e.path, "must be %s, got %s", want, describeNode(e.val))
		return "", false
	}
	return s, ok
}

func (s *keySection) str(key string, dst *string) bool {
	e, ok := s.get(key)
	if !ok {
		return false
	}
	v, _, ok := s.l.text(e, wantString)
	if ok {
		*dst = v
	}
	return ok
}

// secret is str for a password: its problems never show the value, which
// error messages would otherwise quote (a ${ without its }, say).
func (s *keySection) secret(key string, dst *Secret) {
	e, ok := s.get(key)
	if !ok {
		return
	}
	l := s.l
	if e.val.Kind != yaml.ScalarNode {
		l.errorf(e.val, e.path, "must be %s, got %s", wantString, describeNode(e.val))
		return
	}
	if yamlnode.IsNull(e.val) {
		return
	}
	v, err := expandEnvVars(e.val.Value, l.lookup)
	if err != nil {
		var unset *envUnsetError
		if errors.As(err, &unset) {
			l.errorf(e.val, e.path, "%v", err)
		} else {
			l.errorf(e.val, e.path, "has a malformed ${...} (the value is not shown, being a password): write ${NAME} or ${NAME:-default}, and $$ for a literal $")
		}
		return
	}
	*dst = Secret(v)
}

func (s *keySection) boolean(key string, dst *bool) {
	e, ok := s.get(key)
	if !ok {
		return
	}
	v, ok := s.l.value(e, wantBool)
	if !ok {
		return
	}
	b, ok := parsePlanBool(v)
	if !ok {
		s.l.errorf(e.val, e.path, "must be %s, got %s", wantBool, gotValue(v))
		return
	}
	*dst = b
}

// integer reads a whole number in [lo, hi]; present reports whether the
// key was there at all, valid or not.
func (s *keySection) integer(key string, dst *int, lo, hi int) (present bool) {
	e, ok := s.get(key)
	if !ok {
		return false
	}
	v, ok := s.l.value(e, wantInt)
	if !ok {
		return true
	}
	n, err := parsePlanInt(v)
	switch {
	case err != nil && planIntRE.MatchString(strings.TrimSpace(v)):
		s.l.errorf(e.val, e.path, "must be at most %d, got %s", hi, gotValue(v))
	case err != nil:
		s.l.errorf(e.val, e.path, "must be %s, got %s", wantInt, gotValue(v))
	case n < lo:
		s.l.errorf(e.val, e.path, "must be at least %d, got %d", lo, n)
	case n > hi:
		s.l.errorf(e.val, e.path, "must be at most %d, got %d", hi, n)
	default:
		*dst = n
	}
	return true
}

// qos reads an MQTT QoS level.
func (s *keySection) qos(key string, dst *byte) {
	e, ok := s.get(key)
	if !ok {
		return
	}
	v, ok := s.l.value(e, wantQoS)
	if !ok {
		return
	}
	n, err := parsePlanInt(v)
	if err != nil || n < 0 || n > 2 {
		s.l.errorf(e.val, e.path, "must be %s, got %s", wantQoS, gotValue(v))
		return
	}
	*dst = byte(n)
}

// retainHandling reads an MQTT 5 Retain Handling option.
func (s *keySection) retainHandling(key string, dst *byte) {
	e, ok := s.get(key)
	if !ok {
		return
	}
	v, ok := s.l.value(e, wantRetainHandling)
	if !ok {
		return
	}
	n, err := parsePlanInt(v)
	if err != nil || n < 0 || n > 2 {
		s.l.errorf(e.val, e.path, "must be %s, got %s", wantRetainHandling, gotValue(v))
		return
	}
	*dst = byte(n)
}

// protocolName names an MQTT protocol level for messages.
func protocolName(level int) string {
	switch level {
	case 3:
		return "MQTT 3.1 (protocol: 3)"
	case 4:
		return "MQTT 3.1.1 (protocol: 4)"
	}
	return fmt.Sprintf("MQTT 5.0 (protocol: %d)", level)
}

// protocol reads an MQTT protocol level.
func (s *keySection) protocol(key string, dst *int) {
	e, ok := s.get(key)
	if !ok {
		return
	}
	v, ok := s.l.value(e, wantProtocol)
	if !ok {
		return
	}
	n, err := parsePlanInt(v)
	if err != nil || n < 3 || n > 5 {
		s.l.errorf(e.val, e.path, "must be %s, got %s", wantProtocol, gotValue(v))
		return
	}
	*dst = n
}

// durationOpts bounds a duration: positive means it must be more than 0
// (otherwise 0 is allowed); max 0 means no upper bound; seconds means a
// whole number of seconds, for MQTT fields counted in seconds.
type durationOpts struct {
	positive bool
	max      time.Duration
	seconds  bool
}

// duration reads a Go duration ("250us", "1m30s", or "0"); present
// reports whether the key was there.
func (s *keySection) duration(key string, dst *time.Duration, o durationOpts) (present bool) {
	e, ok := s.get(key)
	if !ok {
		return false
	}
	v, ok := s.l.value(e, wantDuration)
	if !ok {
		return true
	}
	t := strings.TrimSpace(v)
	d, err := time.ParseDuration(t)
	switch {
	case err != nil && planIntRE.MatchString(t):
		s.l.errorf(e.val, e.path, "must be %s, got %s: add a unit (ns, us, ms, s, m or h)", wantDuration, gotValue(v))
	case err != nil:
		s.l.errorf(e.val, e.path, "must be %s, got %s", wantDuration, gotValue(v))
	case d < 0:
		s.l.errorf(e.val, e.path, "must not be negative, got %s", t)
	case d == 0 && o.positive:
		s.l.errorf(e.val, e.path, "must be more than 0, got %s", t)
	case o.max > 0 && d > o.max && o.seconds:
		s.l.errorf(e.val, e.path, "must be at most %ds, got %s", o.max/time.Second, t)
	case o.max > 0 && d > o.max:
		s.l.errorf(e.val, e.path, "must be at most %s, got %s", o.max, t)
	case o.seconds && d%time.Second != 0:
		s.l.errorf(e.val, e.path, "must be a whole number of seconds (MQTT counts it in seconds), got %s", t)
	default:
		*dst = d
	}
	return true
}

// rate reads a rate in events per second; zeroOK allows 0.
func (s *keySection) rate(key string, dst *float64, zeroOK bool) (present bool) {
	e, ok := s.get(key)
	if !ok {
		return false
	}
	v, ok := s.l.value(e, wantRate)
	if !ok {
		return true
	}
	r, err := ParseRate(v)
	switch {
	case err != nil:
		s.l.errorf(e.val, e.path, "must be %s, got %s", wantRate, gotValue(v))
	case r < 0:
		s.l.errorf(e.val, e.path, "must not be negative, got %s", strings.TrimSpace(v))
	case r == 0 && zeroOK:
		*dst = 0
	case r == 0:
		s.l.errorf(e.val, e.path, "must be more than 0, got %s", strings.TrimSpace(v))
	case r < minPlanRate:
		s.l.errorf(e.val, e.path, "must be at least 1/h, got %s", strings.TrimSpace(v))
	case r > maxPlanRate:
		s.l.errorf(e.val, e.path, "must be at most %s/s, got %s", strconv.FormatFloat(maxPlanRate, 'f', -1, 64), strings.TrimSpace(v))
	default:
		*dst = r
	}
	return true
}

// size reads a byte size in [lo, hi].
func (s *keySection) size(key string, dst *int, lo, hi int64, why string) {
	e, ok := s.get(key)
	if !ok {
		return
	}
	v, ok := s.l.value(e, wantSize)
	if !ok {
		return
	}
	n, err := ParseSize(v)
	switch {
	case err == errNegativeSize:
		s.l.errorf(e.val, e.path, "must not be negative, got %s", strings.TrimSpace(v))
	case err != nil:
		s.l.errorf(e.val, e.path, "must be %s, got %s", wantSize, gotValue(v))
	case n < lo:
		s.l.errorf(e.val, e.path, "must be at least %d bytes%s, got %s", lo, why, strings.TrimSpace(v))
	case n > hi:
		s.l.errorf(e.val, e.path, "must be at most %s, got %s", formatByteSize(hi), strings.TrimSpace(v))
	default:
		*dst = int(n)
	}
}

// templateUse is a template read from the plan, kept with its node so that
// checks needing the whole group (%u needs a username) point at it.
type templateUse struct {
	t    Template
	e    keyEntry
	kind string // "filter", "topic" or "" (no topic check)
}

// templateVerbNames describes the placeholders a field allows, for messages.
var templateVerbNames = map[byte]string{'c': "%c", 'u': "%u", 'i': "%i"}

// template reads a %c/%u/%i template allowing the verbs in allowed.
func (s *keySection) template(key, allowed string) (templateUse, bool) {
	e, ok := s.get(key)
	if !ok {
		return templateUse{}, false
	}
	return s.l.templateAt(e, allowed)
}

func (l *loader) templateAt(e keyEntry, allowed string) (templateUse, bool) {
	v, _, ok := l.text(e, "a string")
	if !ok {
		return templateUse{}, false
	}
	t, err := ParseTemplate(v, allowed)
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "not allowed here") {
			var names []string
			for i := 0; i < len(allowed); i++ {
				names = append(names, templateVerbNames[allowed[i]])
			}
			msg += fmt.Sprintf(" (here only %s and %%%% are)", strings.Join(names, ", "))
		}
		l.errorf(e.val, e.path, "%s", msg)
		return templateUse{}, false
	}
	return templateUse{t: t, e: e}, true
}

// plan decodes the top-level mapping.
func (l *loader) plan(root *yaml.Node) *Plan {
	top := l.section("", root, planKeys, true)
	p := &Plan{File: l.file, Name: defaultPlanName(l.file), Drain: defDrain}
	if e, ok := top.get("name"); ok {
		if v, _, ok := l.text(e, wantString); ok {
			if strings.TrimSpace(v) == "" {
				l.errorf(e.val, e.path, "must not be empty (leave it out to use the file name)")
			} else if l.noControl(e, v, "a plan name", "") {
				p.Name = v
			}
		}
	}
	if top.str("description", &p.Description) {
		// A folded or literal block ends with a newline; the report
		// prints the text on its own.
		p.Description = strings.TrimRight(p.Description, " \t\n")
		if e, ok := top.get("description"); ok && !l.noControl(e, p.Description, "a description", "\n\t") {
			p.Description = ""
		}
	}
	p.Broker = l.broker(top)
	stagesEntry, staged := top.get("stages")
	l.staged = staged
	groups, publishKnown := l.groups(top, p.Broker)
	p.Groups = groups
	top.duration("warmup", &p.Warmup, durationOpts{})
	top.duration("ramp", &p.Ramp, durationOpts{})
	hasDuration := top.duration("duration", &p.Duration, durationOpts{positive: true})
	l.drain(top, p)
	l.seed(top, p)
	l.sharding(top, p)
	l.disturbance(top, p)
	if staged {
		l.decodeStages(top, p, stagesEntry)
		hasDuration = true
	}
	if l.groupStages(top, p, staged) {
		hasDuration = true
	}
	p.Thresholds = l.thresholds(top)
	l.errs = append(l.errs, checkRequests(p)...)
	l.errs = append(l.errs, checkTimeline(p, func(key string) Pos {
		if e, ok := top.get(key); ok {
			return l.pos(e.val)
		}
		if key == "duration" && staged {
			return l.pos(stagesEntry.val)
		}
		return l.pos(root)
	})...)
	l.errs = append(l.errs, checkChurn(p)...)
	l.errs = append(l.errs, checkStageClients(p)...)

	if !hasDuration && publishKnown && !l.closedLoopDuration(root, p) {
		publishers, counted := 0, 0
		for _, g := range p.Groups {
			if g.Publish != nil {
				publishers++
				if g.Publish.Count > 0 {
					counted++
				}
			}
		}
		switch {
		case publishers == 0:
			l.errorf(root, "", "missing \"duration\": say how long the measured phase lasts, like duration: 30s")
		case counted < publishers:
			l.errorf(root, "", "missing \"duration\": say how long the measured phase lasts, like duration: 30s (it may be left out only when every publishing group has a publish.count)")
		}
	}
	return p
}

// broker decodes the broker: section; absent means the embedded broker.
func (l *loader) broker(top *keySection) Broker {
	b := Broker{URLs: []string{Embedded}, Protocol: defProtocol, ConnectTimeout: defConnectTimeout, Pos: l.pos(top.node)}
	e, ok := top.get("broker")
	if !ok || yamlnode.IsNull(e.val) {
		return b
	}
	b.Pos = l.pos(e.val)
	s := l.section(e.path, e.val, brokerKeys, false)

	ue, hasURL := s.get("url")
	ve, hasURLs := s.get("urls")
	switch {
	case hasURL && hasURLs:
		w := laterEntry(ue, ve)
		l.errorf(w.key, w.path, "set either url or urls, not both")
	case hasURL:
		if v, ok := l.value(ue, "a broker URL"); ok {
			v, login := SplitLogin(v)
			l.urlLogin(ue, login)
			if u, err := normalizeBrokerURL(v); err != nil {
				l.errorf(ue.val, ue.path, "%v", err)
			} else {
				b.URLs = []string{u}
			}
		}
	case hasURLs:
		if urls, ok := l.brokerURLs(ve); ok {
			b.URLs = urls
		}
	}
	s.protocol("protocol", &b.Protocol)
	s.duration("connect_timeout", &b.ConnectTimeout, durationOpts{positive: true})
	if te, ok := s.get("tls"); ok && !yamlnode.IsNull(te.val) {
		b.TLS = l.tls(te)
	}
	if ae, ok := s.get("source_addresses"); ok && !yamlnode.IsNull(ae.val) {
		b.SourceAddresses = l.sourceAddresses(ae)
	}
	if me, ok := s.get("metrics"); ok && !yamlnode.IsNull(me.val) {
		b.Metrics = l.brokerMetrics(me)
	}
	return b
}

// brokerMetrics decodes broker.metrics: $SYS, a PID or a process name
// (not both), a Prometheus URL; at least one. The name is looked up when
// the run starts, not here.
func (l *loader) brokerMetrics(e keyEntry) *BrokerMetrics {
	m := &BrokerMetrics{}
	s := l.section(e.path, e.val, metricsKeys, false)
	pe, hasPID := s.get("pid")
	ne, hasName := s.get("process")
	_, hasSys := s.get("sys")
	ue, hasProm := s.get("prometheus")
	switch {
	case hasPID && hasName:
		w := laterEntry(pe, ne)
		l.errorf(w.key, w.path, "set either pid or process, not both")
	case hasPID:
		s.integer("pid", &m.PID, 1, maxPID)
	case hasName:
		if s.str("process", &m.Process) {
			m.Process = strings.TrimSpace(m.Process)
			if m.Process == "" || len(m.Process) > maxProcessName || strings.ContainsAny(m.Process, "/\n") {
				l.errorf(ne.val, ne.path, "must be a process's command name like mosquitto (as /proc/PID/comm holds it), got %s", gotValue(m.Process))
			}
		}
	}
	sysBad := false
	if hasSys {
		n := len(l.errs)
		s.boolean("sys", &m.Sys)
		// Its own error says it must be true or false: "sys is false"
		// would be wrong on top.
		sysBad = len(l.errs) > n
	}
	if hasProm && s.str("prometheus", &m.Prometheus) {
		if msg := checkScrapeURL(m.Prometheus); msg != "" {
			if redactBroken(m.Prometheus) != m.Prometheus {
				msg += " (a password holding /, ?, # or a space must be percent-encoded)"
			}
			l.errorf(ue.val, ue.path, "%s, got %s", msg, quoteValue(RedactEndpoint(m.Prometheus)))
		}
	}
	if !hasPID && !hasName && !hasSys && !hasProm {
		l.errorf(e.val, e.path, "missing \"sys\", \"pid\", \"process\" or \"prometheus\": say which of the broker's figures to sample, like sys: true or process: mosquitto")
	} else if !m.Sys && !sysBad && !hasPID && !hasName && !hasProm {
		l.errorf(e.val, e.path, "nothing to sample: sys is false and there is no pid, process or prometheus")
	}
	return m
}

// maxScrapeURL bounds broker.metrics.prometheus.
const maxScrapeURL = 2048

// checkScrapeURL says what is wrong with a Prometheus endpoint's URL, or
// "" when it is an http(s) URL with a host.
func checkScrapeURL(raw string) string {
	if len(raw) > maxScrapeURL {
		return fmt.Sprintf("must be a URL of at most %d characters", maxScrapeURL)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "must be an http:// or https:// URL of the broker's Prometheus endpoint, like http://127.0.0.1:18083/api/v5/prometheus/stats"
	}
	return ""
}

// brokerURLs decodes broker.urls, a cluster's URLs.
func (l *loader) brokerURLs(e keyEntry) ([]string, bool) {
	if e.val.Kind != yaml.SequenceNode {
		l.errorf(e.val, e.path, "must be a list of broker URLs like [mqtt://n1:1883, mqtt://n2:1883], got %s", describeNode(e.val))
		return nil, false
	}
	if len(e.val.Content) == 0 {
		l.errorf(e.val, e.path, "must list at least one broker URL")
		return nil, false
	}
	var urls []string
	ok := true
	embedded := false
	for i, item := range e.val.Content {
		ie := keyEntry{val: item, path: l.at(planIndexPath(e.path, i), item)}
		v, vok := l.value(ie, "a broker URL")
		if !vok {
			ok = false
			continue
		}
		v, login := SplitLogin(v)
		l.urlLogin(ie, login)
		u, err := normalizeBrokerURL(v)
		if err != nil {
			l.errorf(item, ie.path, "%v", err)
			ok = false
			continue
		}
		embedded = embedded || u == Embedded
		urls = append(urls, u)
	}
	if ok && embedded && len(urls) > 1 {
		l.errorf(e.val, e.path, "embedded is the in-process broker and cannot be mixed with other URLs")
		return nil, false
	}
	return urls, ok
}

// normalizeBrokerURL checks a broker URL and writes it out in full, as
// scheme://host:port (plus the path for WebSocket, default /mqtt), so that
// reports show exactly where clients connect. The scheme is written out as
// its canonical one (tcp as mqtt, ssl and tls as mqtts: see brokerurl), so
// that the runner has four schemes to dial, not seven.
func normalizeBrokerURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == Embedded {
		return raw, nil
	}
	const kinds = "embedded, or mqtt://host:1883, mqtts://host:8883, ws://host:8083/mqtt or wss://host/mqtt"
	u, err := url.Parse(raw)
	if err != nil {
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err
		}
		why := RedactURL(err.Error())
		if redactBroken(raw) != raw {
			// The parser's words would quote a piece of the password.
			why = "a password holding /, ?, # or a space must be percent-encoded"
		}
		return "", fmt.Errorf("%s is not a valid URL (%s): write %s", quoteValue(raw), why, kinds)
	}
	if u.Scheme == "" || u.Opaque != "" {
		return "", fmt.Errorf("%s is not a broker URL: write %s", quoteValue(raw), kinds)
	}
	sc, ok := brokerurl.Lookup(u.Scheme)
	if !ok {
		return "", fmt.Errorf("%s has the unknown scheme %q: use %s", quoteValue(raw), u.Scheme, brokerurl.Names())
	}
	host := u.Hostname()
	if host == "" {
		return "", fmt.Errorf("%s has no host", quoteValue(raw))
	}
	port := u.Port()
	if port == "" {
		port = sc.DefaultPort
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("%s has the invalid port %q", quoteValue(raw), port)
	}
	if u.Fragment != "" || u.RawFragment != "" {
		return "", fmt.Errorf("%s must not have a #fragment", quoteValue(raw))
	}
	out := sc.Canonical + "://" + net.JoinHostPort(host, port)
	if sc.WebSocket {
		path := u.EscapedPath()
		if path == "" {
			path = brokerurl.DefaultWebSocketPath
		}
		out += path
		if u.RawQuery != "" {
			out += "?" + u.RawQuery
		}
		return out, nil
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", fmt.Errorf("%s has a path or query, which only ws:// and wss:// URLs use", quoteValue(raw))
	}
	return out, nil
}

// tls decodes broker.tls. File paths are resolved against the plan file's
// directory, and with LoadOptions.CheckFiles read and checked (see
// checkTLSFiles); the runner reads them again when it dials.
func (l *loader) tls(e keyEntry) *TLS {
	t := &TLS{}
	s := l.section(e.path, e.val, tlsKeys, false)
	dir := filepath.Dir(l.file)
	for _, f := range []struct {
		key string
		dst *string
	}{{"ca", &t.CA}, {"cert", &t.Cert}, {"key", &t.Key}} {
		var p string
		if s.str(f.key, &p) && strings.TrimSpace(p) != "" {
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			*f.dst = filepath.Clean(p)
		}
	}
	ce, hasCert := s.get("cert")
	ke, hasKey := s.get("key")
	switch {
	case t.Cert != "" && t.Key == "" && hasCert:
		l.errorf(ce.val, ce.path, "needs key as well: mutual TLS uses a certificate and its private key")
	case t.Key != "" && t.Cert == "" && hasKey:
		l.errorf(ke.val, ke.path, "needs cert as well: mutual TLS uses a certificate and its private key")
	}
	s.str("server_name", &t.ServerName)
	s.boolean("insecure_skip_verify", &t.InsecureSkipVerify)
	if l.checkFiles {
		l.checkTLSFiles(s, t)
	}
	return t
}

// sourceAddresses decodes broker.source_addresses, local IP literals.
func (l *loader) sourceAddresses(e keyEntry) []string {
	if e.val.Kind != yaml.SequenceNode {
		l.errorf(e.val, e.path, "must be a list of local IP addresses like [127.0.0.2, 127.0.0.3], got %s", describeNode(e.val))
		return nil
	}
	var out []string
	for i, item := range e.val.Content {
		ie := keyEntry{val: item, path: l.at(planIndexPath(e.path, i), item)}
		v, ok := l.value(ie, "an IP address")
		if !ok {
			continue
		}
		a, err := netip.ParseAddr(strings.TrimSpace(v))
		if err != nil {
			l.errorf(item, ie.path, "must be an IP address like 127.0.0.2 or ::1, got %s", gotValue(v))
			continue
		}
		out = append(out, a.String())
	}
	return out
}

// groups decodes the groups: list. publishKnown is false when some
// group's publish: section could not be decoded, so whether a duration is
// required cannot be told (and saying so would be noise).
func (l *loader) groups(top *keySection, b Broker) (groups []Group, publishKnown bool) {
	e, ok := top.get("groups")
	if !ok || yamlnode.IsNull(e.val) {
		l.errorf(top.node, "", "missing \"groups\": a plan needs at least one client group")
		return nil, false
	}
	if e.val.Kind != yaml.SequenceNode {
		l.errorf(e.val, e.path, "must be a list of groups (each item starting with - name: ...), got %s", describeNode(e.val))
		return nil, false
	}
	if len(e.val.Content) == 0 {
		l.errorf(e.val, e.path, "must list at least one group")
		return nil, false
	}
	type first struct {
		path string
		line int
	}
	names := map[string]first{}
	publishKnown = true
	for i, item := range e.val.Content {
		path := l.at(planIndexPath(e.path, i), item)
		l.groupIndex = i
		g, nameEntry, pubOK := l.group(path, item, b)
		publishKnown = publishKnown && pubOK
		if g.Name != "" {
			if f, dup := names[g.Name]; dup {
				where := ""
				if f.line > 0 {
					where = fmt.Sprintf(" at line %d", f.line)
				}
				l.errorf(nameEntry.val, nameEntry.path, "duplicate group name %q (already used by %s%s)", g.Name, f.path, where)
			} else {
				names[g.Name] = first{path: path, line: nameEntry.val.Line}
			}
		}
		groups = append(groups, g)
	}
	l.checkHeaderProtocols(groups, e.val.Content, e.path)
	l.checkClientIDs(groups)
	return groups, publishKnown
}

// group decodes one group. It returns the name's entry for the duplicate
// check, and whether its publish section (if any) decoded.
func (l *loader) group(path string, n *yaml.Node, b Broker) (Group, keyEntry, bool) {
	g := Group{
		Count:       defGroupCount,
		Start:       defGroupStart,
		Keepalive:   defKeepalive,
		CleanStart:  true,
		ConnectRate: defConnectRate,
		Protocol:    b.Protocol,
		Pos:         l.pos(n),
	}
	if n.Kind != yaml.MappingNode {
		l.errorf(n, path, "must be a group mapping (name, count, subscribe, publish, ...), got %s", describeNode(n))
		return g, keyEntry{}, false
	}
	s := l.section(path, n, groupKeys, false)

	ne, ok := s.get("name")
	if !ok {
		l.errorf(s.missingAt(n, "name"), path, "missing \"name\": every group needs one, for reports and thresholds (groups.<name>)")
	} else if v, ok := l.value(ne, "a group name"); ok {
		if loadGroupNameRE.MatchString(v) {
			g.Name = v
		} else if v == "" {
			l.errorf(ne.val, ne.path, "must not be empty")
		} else {
			l.errorf(ne.val, ne.path, "must be letters, digits, _ and - only, got %s", gotValue(v))
		}
	}
	s.integer("count", &g.Count, 1, maxGroupCount)
	s.integer("start", &g.Start, 0, maxGroupStart)

	var refs []templateUse
	idUse, hasID := s.template("client_id", "iu")
	if hasID {
		g.ClientID = idUse.t
		refs = append(refs, idUse)
	}
	var userUse templateUse
	if r, ok := s.template("username", "i"); ok {
		g.Username = r.t
		userUse = r
	}
	s.secret("password", &g.Password)
	_, hasUser := s.get("username")
	_, hasPass := s.get("password")
	l.applyLogin(&g, hasUser, hasPass)
	s.duration("keepalive", &g.Keepalive, durationOpts{max: maxKeepalive, seconds: true})
	s.boolean("clean_start", &g.CleanStart)
	s.duration("session_expiry", &g.SessionExpiry, durationOpts{max: maxSessionExpiry, seconds: true})

	re, hasRate := s.get("connect_rate")
	ee, hasEvery := s.get("connect_every")
	if hasRate && hasEvery {
		w := laterEntry(re, ee)
		l.errorf(w.key, w.path, "set either connect_rate or connect_every, not both")
	} else if hasRate {
		s.rate("connect_rate", &g.ConnectRate, true)
	} else if hasEvery {
		var every time.Duration
		s.duration("connect_every", &every, durationOpts{positive: true, max: time.Hour})
		if every > 0 {
			g.ConnectRate = float64(time.Second) / float64(every)
		}
	}

	if e, ok := s.get("reconnect"); ok && !yamlnode.IsNull(e.val) {
		r := &Reconnect{After: defReconnectAfter}
		rs := l.section(e.path, e.val, reconnectKeys, false)
		rs.duration("after", &r.After, durationOpts{positive: true})
		rs.integer("max", &r.Max, 0, math.MaxInt32)
		g.Reconnect = r
	}
	g.Churn = l.churn(s, path)
	if e, ok := s.get("will"); ok && !yamlnode.IsNull(e.val) {
		w := &Will{}
		ws := l.section(e.path, e.val, willKeys, false)
		if r, ok := ws.template("topic", "cui"); ok {
			w.Topic = r.t
			r.kind = "topic"
			refs = append(refs, r)
		} else if _, present := ws.get("topic"); !present {
			l.errorf(e.val, e.path, "missing \"topic\": a will needs the topic it is published to")
		}
		ws.str("payload", &w.Payload)
		ws.qos("qos", &w.QoS)
		ws.boolean("retain", &w.Retain)
		g.Will = w
	}
	s.protocol("protocol", &g.Protocol)
	if e, ok := s.get("subscribe"); ok {
		var subRefs []templateUse
		g.Subscribe, subRefs = l.subscriptions(e, g.Protocol)
		refs = append(refs, subRefs...)
	}
	pubOK := true
	if e, ok := s.get("publish"); ok && !yamlnode.IsNull(e.val) {
		var r templateUse
		var hasTopic bool
		g.Publish, r, hasTopic, pubOK = l.publish(e)
		if hasTopic {
			refs = append(refs, r)
		}
		l.checkPayload(&g, l.payloadUse)
	}
	refs = append(refs, l.requestResponse(s, &g)...)
	l.checkTemplates(g, refs, userUse)
	if hasID {
		if shape, ok := idShapeOf(&g); ok {
			l.ids = append(l.ids, idDecl{group: l.groupIndex, pos: l.pos(idUse.e.val), path: idUse.e.path, shape: shape})
		}
	}
	return g, ne, pubOK
}

// subscriptions decodes subscribe: one filter, one {topic, qos, options}
// mapping, or a list of either. protocol is the group's MQTT version:
// the subscription options exist in MQTT 5 only.
func (l *loader) subscriptions(e keyEntry, protocol int) ([]Subscription, []templateUse) {
	if yamlnode.IsNull(e.val) {
		return nil, nil
	}
	items := []keyEntry{e}
	if e.val.Kind == yaml.SequenceNode {
		items = items[:0]
		for i, item := range e.val.Content {
			items = append(items, keyEntry{key: e.key, val: item, path: l.at(planIndexPath(e.path, i), item)})
		}
	}
	var subs []Subscription
	var refs []templateUse
	for _, it := range items {
		sub := Subscription{Pos: l.pos(it.val)}
		var r templateUse
		var ok bool
		switch it.val.Kind {
		case yaml.ScalarNode:
			r, ok = l.templateAt(it, "cui")
		case yaml.MappingNode:
			s := l.section(it.path, it.val, subKeys, false)
			if _, present := s.get("topic"); !present {
				l.errorf(it.val, it.path, "missing \"topic\": say which topic filter to subscribe to")
			}
			r, ok = s.template("topic", "cui")
			s.qos("qos", &sub.QoS)
			s.boolean("no_local", &sub.NoLocal)
			s.boolean("retain_as_published", &sub.RetainAsPublished)
			s.retainHandling("retain_handling", &sub.RetainHandling)
			for _, k := range []string{"no_local", "retain_as_published", "retain_handling"} {
				if oe, set := s.get(k); set && protocol < 5 {
					l.errorf(oe.key, oe.path, "is an MQTT 5 subscription option, but the group speaks %s: set protocol: 5 or drop it", protocolName(protocol))
				}
			}
			if oe, set := s.get("no_local"); set && sub.NoLocal && ok && strings.HasPrefix(r.t.Literal(), "$share/") {
				l.errorf(oe.val, oe.path, "is not allowed on a shared subscription (MQTT 5 makes it a protocol error): drop it or the $share/ prefix")
			}
		default:
			l.errorf(it.val, it.path, "must be a topic filter, a {topic, qos} mapping or a list of them, got %s", describeNode(it.val))
		}
		if !ok {
			continue
		}
		r.kind = "filter"
		sub.Topic = r.t
		subs = append(subs, sub)
		refs = append(refs, r)
	}
	return subs, refs
}

// publish decodes a group's publish: section. ok is false when the
// section could not be decoded as a whole.
func (l *loader) publish(e keyEntry) (pub *Publish, topic templateUse, hasTopic, ok bool) {
	pub = &Publish{Size: defPayloadSize, Pos: l.pos(e.val)}
	if e.val.Kind != yaml.MappingNode {
		l.errorf(e.val, e.path, "must be a mapping with keys like %s; got %s", strings.Join(publishKeys, ", "), describeNode(e.val))
		return pub, topic, false, false
	}
	s := l.section(e.path, e.val, publishKeys, false)
	if r, tok := s.template("topic", "cui"); tok {
		pub.Topic = r.t
		r.kind = "topic"
		topic, hasTopic = r, true
	} else if _, present := s.get("topic"); !present {
		l.errorf(s.missingAt(e.val, "topic"), e.path, "missing \"topic\": say which topic to publish to")
	}
	s.qos("qos", &pub.QoS)
	l.payloadUse = l.publishPayload(s, pub)
	ee, hasEvery := s.get("every")
	re, hasRate := s.get("rate")
	be, hasBurst := s.get("burst")
	ownStages := l.publishStages(s, pub)
	// rated is the entry that gave a rate (every, rate or burst), for
	// the error that stages already give it.
	rated := func() keyEntry {
		switch {
		case hasRate:
			return re
		case hasBurst:
			return be
		}
		return ee
	}
	switch {
	case ownStages && (hasEvery || hasRate || hasBurst):
		w := rated()
		l.errorf(w.key, w.path, "the group's stages give its publish rate: leave every, rate and burst out of a publish with stages")
	case ownStages:
	case l.staged && (hasEvery || hasRate || hasBurst):
		w := rated()
		l.errorf(w.key, w.path, "the plan's stages give the publish rate: leave every, rate and burst out of the group's publish")
	case l.staged:
	case hasBurst && (hasEvery || hasRate):
		w := ee
		if hasRate {
			w = re
		}
		w = laterEntry(w, be)
		l.errorf(w.key, w.path, "set one of every, rate and burst: a burst is instead of a steady rate")
	case hasBurst:
		pub.Burst = l.burst(be)
	case hasEvery && hasRate:
		w := laterEntry(ee, re)
		l.errorf(w.key, w.path, "set either every or rate, not both: every is one client's interval, rate is the whole group's messages per second")
	case hasEvery:
		s.duration("every", &pub.Every, durationOpts{positive: true})
	case hasRate:
		if !l.rateMax(re, pub) {
			s.rate("rate", &pub.Rate, false)
		}
	default:
		l.errorf(s.missingAt(e.val, "every", "rate", "burst"), e.path, "missing \"every\" or \"rate\": say how often to publish, like every: 100ms (per client) or rate: 500/s (the whole group) (or burst: {every: 10s, messages: 500})")
	}
	s.boolean("retain", &pub.Retain)
	s.integer("count", &pub.Count, 0, math.MaxInt32)
	l.requestFields(s, pub)
	l.arrival(s, pub)
	l.startDelay(s, pub)
	l.inflight(s, pub)
	return pub, topic, hasTopic, true
}

// checkTemplates checks what a template can only be checked against with
// the whole group known: %u needs a username, and a topic or filter must
// be valid once expanded. The expansion uses a sample client (the group's
// first), so a client id or user name holding + or # is caught too.
//
// Templates are measured before they are expanded: "%c%c%c..." over a long
// client id would otherwise build gigabytes for one sample. Control
// characters (NUL included) are refused in every template as written;
// placeholders only insert other templates and digits, so the expanded
// values cannot hold any either.
func (l *loader) checkTemplates(g Group, refs []templateUse, userUse templateUse) {
	userLen := g.Username.maxLen(0, 0)
	idLen := g.ClientID.maxLen(0, userLen)
	if !g.Username.IsZero() {
		l.checkTemplateText(userUse, "a user name", userLen)
	}
	user := "u"
	if !g.Username.IsZero() && userLen <= maxTemplateBytes {
		user = g.Username.Expand(TemplateVars{N: g.Start})
	}
	id := "x"
	if !g.ClientID.IsZero() && idLen <= maxTemplateBytes && userLen <= maxTemplateBytes {
		id = g.ClientID.Expand(TemplateVars{Username: user, N: g.Start})
	}
	sample := TemplateVars{ClientID: id, Username: user, N: g.Start}
	for _, r := range refs {
		if r.t.Uses('u') && g.Username.IsZero() {
			l.errorf(r.e.val, r.e.path, "uses %%u, but the group has no username")
			continue
		}
		what := map[string]string{"topic": "a topic", "filter": "a topic filter", "": "a client id"}[r.kind]
		if !l.checkTemplateText(r, what, r.t.maxLen(idLen, userLen)) {
			continue
		}
		var err error
		x := r.t.Expand(sample)
		switch r.kind {
		case "topic":
			err = ValidateTopic(x)
		case "filter":
			err = ValidateFilter(x)
		}
		switch {
		case err == nil:
		case x != r.t.Literal() && (r.t.Uses('c') || r.t.Uses('u')):
			// The problem came with a placeholder's value: say so.
			l.errorf(r.e.val, r.e.path, "%v (%s as the group's first client expands it)", err, quoteValue(r.t.String()))
		default:
			l.errorf(r.e.val, r.e.path, "%v", err)
		}
	}
}

// noControl reports text holding a control character other than those in
// allowed: the plan's name and description are printed on terminals and
// in CI logs, where an escape sequence would act (retitle the window,
// rewrite lines) instead of showing. False means it was reported.
func (l *loader) noControl(e keyEntry, text, what, allowed string) bool {
	i := strings.IndexFunc(text, func(c rune) bool { return unicode.IsControl(c) && !strings.ContainsRune(allowed, c) })
	if i < 0 {
		return true
	}
	c, _ := utf8.DecodeRuneInString(text[i:])
	l.errorf(e.val, e.path, "holds the control character %U at byte %d: %s must not contain control characters", c, i, what)
	return false
}

// checkTemplateText reports a template holding a control character, or
// one whose expansion (maxLen bytes at most) can pass the MQTT string
// limit; false means the template must not be expanded.
func (l *loader) checkTemplateText(r templateUse, what string, maxLen int) bool {
	raw := r.t.String()
	if i := strings.IndexFunc(raw, unicode.IsControl); i >= 0 {
		c, _ := utf8.DecodeRuneInString(raw[i:])
		l.errorf(r.e.val, r.e.path, "holds the control character %U at byte %d: %s must not contain control characters or NUL", c, i, what)
		return false
	}
	if maxLen > maxTemplateBytes {
		l.errorf(r.e.val, r.e.path, "expands to up to %s bytes, more than the %s bytes MQTT allows for %s", thousands(maxLen), thousands(maxTemplateBytes), what)
		return false
	}
	return true
}

// thresholds decodes the thresholds: list, keeping each expression's text
// and position for the threshold compiler; they are not parsed here.
func (l *loader) thresholds(top *keySection) []ThresholdSource {
	e, ok := top.get("thresholds")
	if !ok || yamlnode.IsNull(e.val) {
		return nil
	}
	if e.val.Kind != yaml.SequenceNode {
		l.errorf(e.val, e.path, "must be a list of expressions like - p99 < 10ms, got %s", describeNode(e.val))
		return nil
	}
	var out []ThresholdSource
	for i, item := range e.val.Content {
		ie := keyEntry{val: item, path: l.at(planIndexPath(e.path, i), item)}
		v, null, ok := l.text(ie, "an expression like p99 < 10ms")
		if !ok {
			continue
		}
		if null || strings.TrimSpace(v) == "" {
			l.errorf(item, ie.path, "is empty: write an expression like p99 < 10ms")
			continue
		}
		out = append(out, ThresholdSource{Expr: v, Pos: l.exprPos(item)})
	}
	return out
}

// exprPos is where the text of scalar n starts, so that the threshold
// compiler can add an offset into the expression and land on the right
// column: past the quote of a quoted scalar, and on the first line of a
// literal or folded block.
func (l *loader) exprPos(n *yaml.Node) Pos {
	p := l.pos(n)
	if p.Line == 0 {
		return p
	}
	switch {
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		p.Col++
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		lines := strings.Split(string(l.data), "\n")
		for i := n.Line; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != "" {
				p.Line = i + 1
				p.Col = yamlnode.FirstNonBlankCol([]byte(lines[i]))
				break
			}
		}
	}
	return p
}

// suggestKey returns the known key a user most likely meant by key: the same
// key up to case and -/_ , or one within a small edit distance; "" if
// none is close enough to be a useful guess. Keys are short, so the limit
// stays at 2 edits however long the key; among equally near keys the one
// listed first wins (the lists follow the docs).
func suggestKey(key string, known []string) string {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	for _, k := range known {
		if norm(k) == norm(key) {
			return k
		}
	}
	return suggest.Closest(norm(key), known, suggest.Limit(key, 2), suggest.First)
}
