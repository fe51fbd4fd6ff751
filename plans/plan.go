// Package plans is mqplan's plan language: it loads a YAML test plan
// strictly (every error with its position), validates it, and compiles it
// into a Program, a pure description of what a run does and when. It
// also owns the field catalogue the loader checks keys against
// (fields.go) and the JSON Schema for editors generated from it (Schema).
//
// Nothing here opens a socket, reads a clock or starts a goroutine, so a
// plan can be explained, validated and tested exactly without a broker.
//
// A publisher's timetable is a Schedule: message k's intended time is a
// pure function of k, over a piecewise-linear rate Profile (schedule.go),
// so that it can be counted in any window without walking it. The
// plan's warmup, ramp and steady phases are its three-segment case; a
// plan's stages: compile to longer profiles (stages.go). The load shapes
// on top: Poisson arrivals (arrival.go over poisson.go, a pure function of
// the plan's seed, the client and k), bursts, a group's messages at one
// instant every period (burst.go), and start delays, each client's
// timetable moved by its own seeded delay (start_delay.go). Cursor
// (cursor.go) reads a schedule in order at O(1) a message, for the
// runner's hot path.
//
// MQTT 5 request/response (reqresp.go) is a responder group's respond:
// and a requesting group's publish.response_topic; Compile counts the
// answers each request implies with the other expectations.
//
// Assign (assign.go) divides a program's clients between the n shards of
// a run split over several processes: pure too, versioned and hashed, so
// that every shard computes the same split.
//
// A publisher's payloads are pure too: a template (payload.go) or a drawn
// size (payload_size.go) is a function of the plan's seed, the publisher
// and the message's sequence and intended time, so that a receiver renders
// a message again to check it byte for byte.
package plans

import (
	"fmt"
	"strings"
	"time"
)

// Pos is a position in a plan file (1-based line and column). A zero Line
// means the position is unknown, for example a value set on the command line.
type Pos struct {
	File string
	Line int
	Col  int
}

// String formats the position as file:line:col, the form editors jump to.
func (p Pos) String() string {
	if p.Line == 0 {
		if p.File == "" {
			return "-"
		}
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is one problem in a plan, at a position and a path such as
// groups[1].publish.qos.
type Error struct {
	Pos  Pos
	Path string
	Msg  string
}

// Error formats the problem as `file:line:col: path: message`.
func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", e.Pos, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Pos, e.Path, e.Msg)
}

// Errors is every problem found in a plan. Load and Compile return it (as an
// error) so that a user fixes all of them in one pass instead of one a run.
type Errors []*Error

// Error joins the problems, one a line.
func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Secret is a string that is never printed: String, JSON and YAML forms
// show only whether it is set, so passwords cannot leak into reports.
type Secret string

// String hides the value.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "******"
}

// MarshalText hides the value in JSON and YAML output.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Reveal returns the real value, for the one place that needs it (CONNECT).
func (s Secret) Reveal() string { return string(s) }

// Embedded is the broker URL that starts mochi-mqtt in-process on
// 127.0.0.1 with a random port.
const Embedded = "embedded"

// Plan is a loaded, defaulted and validated plan: the user's intent,
// before compilation into phases and clients.
type Plan struct {
	// File is the path the plan was loaded from ("-" for standard input).
	File string `json:"file"`
	// Name defaults to the file name without its extension.
	Name string `json:"name"`
	// Description is free text shown in the report.
	Description string `json:"description,omitempty"`
	// Broker says where and how clients connect.
	Broker Broker `json:"broker"`
	// Groups are the client groups, in plan order.
	Groups []Group `json:"groups"`
	// Warmup is publishing that is not measured: at the target rate
	// without a Ramp, and the first part of the rise with one.
	Warmup time.Duration `json:"warmup"`
	// Ramp ends the publish rate's linear rise from 0 to its target, which
	// starts with warmup (see Schedule): the rate never falls back.
	Ramp time.Duration `json:"ramp"`
	// Duration is the measured steady phase. When the plan leaves it out,
	// every publisher has a count and Duration is the time the slowest
	// needs to send its messages.
	Duration time.Duration `json:"duration"`
	// Stages, when the plan has them, are the publish rate over time
	// (stages.go): they replace Ramp (which is then 0), and Duration is
	// their total.
	Stages []Stage `json:"stages,omitempty"`
	// Drain bounds the wait for deliveries after publishing stops.
	Drain time.Duration `json:"drain"`
	// DrainQuiet is drain's quiet in its mapping form ({max, quiet}),
	// where Drain is its max: drain also ends once no new delivery has
	// arrived for this long. 0 with the plain form.
	DrainQuiet time.Duration `json:"drain_quiet,omitempty"`
	// Thresholds are the pass conditions, each an expression.
	Thresholds []ThresholdSource `json:"thresholds,omitempty"`
	// Seed keys poisson arrivals (with each client's index) and the
	// random values of payload templates and size distributions, so that
	// a plan's random schedules and payloads are pure, a run repeats and
	// a receiver regenerates each payload (default DefaultSeed).
	Seed uint64 `json:"seed,omitempty"`
	// Sharding, when the plan has a sharding: section, is how Assign
	// divides the clients between shards; nil means the auto strategy.
	Sharding *Sharding `json:"sharding,omitempty"`
	// Disturbance is DisturbanceFail when latency failures that mqplan's
	// own lack of CPU explains must fail the run; empty or
	// DisturbanceInconclusive (the default) makes such a run
	// INCONCLUSIVE.
	Disturbance string `json:"disturbance,omitempty"`

	// compiled are the thresholds as Load compiled them, which
	// CompileThresholds hands out again rather than compiling twice.
	compiled *compiledThresholds
}

// Broker is the plan's `broker:` section.
type Broker struct {
	// URLs are the broker addresses (`url` or `urls`); clients are spread
	// over them round-robin. A single "embedded" means the in-process broker.
	URLs []string `json:"urls"`
	// Protocol is the default MQTT version: 3 (3.1), 4 (3.1.1) or 5.
	Protocol int `json:"protocol"`
	// ConnectTimeout bounds dialing plus CONNECT→CONNACK for each client.
	ConnectTimeout time.Duration `json:"connect_timeout"`
	// TLS configures mqtts:// and wss:// connections; nil means defaults.
	TLS *TLS `json:"tls,omitempty"`
	// SourceAddresses are local IPs bound round-robin per client, so one
	// machine can exceed the ephemeral-port limit of one address.
	SourceAddresses []string `json:"source_addresses,omitempty"`
	// Metrics names a broker process on this machine whose CPU and memory
	// the run samples; nil means none (mqplan's own are always sampled).
	Metrics *BrokerMetrics `json:"metrics,omitempty"`
	// Pos is where the section starts (or the plan start when absent).
	Pos Pos `json:"-"`
}

// BrokerMetrics is the plan's `broker.metrics:` section: which of the
// broker's own figures the run samples. Any combination, at least one: its
// $SYS counters, its process on this machine (by PID or command name, at
// most one of the two; the name is only resolved when the run starts,
// since the broker may not run when the plan is checked), its Prometheus
// endpoint.
type BrokerMetrics struct {
	// Sys subscribes to $SYS/# on one extra connection.
	Sys bool `json:"sys,omitempty"`
	// PID is the broker's process id; 0 when none (or Process) is set.
	PID int `json:"pid,omitempty"`
	// Process is the broker's /proc/PID/comm name; "" when none.
	Process string `json:"process,omitempty"`
	// Prometheus is the http(s) URL of the broker's text exposition; ""
	// when none. It may carry credentials (user information, a token in
	// the query): print it only through RedactURL.
	Prometheus string `json:"prometheus,omitempty"`
}

// HasProcess reports whether the section names a broker process to sample.
func (m *BrokerMetrics) HasProcess() bool { return m != nil && (m.PID != 0 || m.Process != "") }

// IsEmbedded reports whether the plan runs against the in-process broker.
func (b Broker) IsEmbedded() bool { return len(b.URLs) == 1 && b.URLs[0] == Embedded }

// TLS is the plan's `broker.tls:` section. Paths are resolved relative to
// the plan file's directory when loaded.
type TLS struct {
	CA                 string `json:"ca,omitempty"`
	Cert               string `json:"cert,omitempty"`
	Key                string `json:"key,omitempty"`
	ServerName         string `json:"server_name,omitempty"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify,omitempty"`
}

// Group is one client group: Count clients that share a configuration.
type Group struct {
	// Name identifies the group in reports and thresholds (groups.<name>).
	Name string `json:"name"`
	// Count is the number of clients.
	Count int `json:"count"`
	// Start is the first client number (%i); the clients are numbered
	// Start, Start+1, ... Start+Count-1.
	Start int `json:"start"`
	// ClientID is the client identifier template. Defaulted to a template
	// unique per run and group ("%r-<group>-%i", %r being the run id).
	ClientID Template `json:"client_id"`
	// Username is the user name template (%u expands to it); empty means none.
	Username Template `json:"username,omitempty"`
	// Password is sent in CONNECT and never printed.
	Password Secret `json:"password,omitempty"`
	// LoginUser: Username is not the group's own but the run's (the
	// command line's, the environment's or the broker URL's; see
	// login.go), which a result does not record: a URL's lone user name
	// may be an access token.
	LoginUser bool `json:"-"`
	// Keepalive is the MQTT keepalive interval.
	Keepalive time.Duration `json:"keepalive"`
	// CleanStart asks the broker for a new session.
	CleanStart bool `json:"clean_start"`
	// SessionExpiry is how long the broker keeps the session after a disconnect.
	SessionExpiry time.Duration `json:"session_expiry"`
	// ConnectRate is the group's connection ramp in connections per second;
	// 0 means all at once.
	ConnectRate float64 `json:"connect_rate"`
	// Reconnect, when set, makes a dropped client reconnect.
	Reconnect *Reconnect `json:"reconnect,omitempty"`
	// Churn, when set, has the group's clients leave (a normal DISCONNECT)
	// and come back under the same identity on a timetable derived from
	// the plan (`lifetime:` or `churn:`, and `away:`; see sessions.go).
	Churn *Churn `json:"churn,omitempty"`
	// Will is the last-will message, if any.
	Will *Will `json:"will,omitempty"`
	// Protocol is the group's MQTT version (the broker default unless overridden).
	Protocol int `json:"protocol"`
	// Subscribe lists the group's subscriptions; empty for a pure publisher.
	Subscribe []Subscription `json:"subscribe,omitempty"`
	// Publish is the group's publishing, nil for a pure subscriber.
	Publish *Publish `json:"publish,omitempty"`
	// Respond makes the group's clients responders (MQTT 5
	// request/response, reqresp.go); nil for none.
	Respond *Respond `json:"respond,omitempty"`
	// Pos is where the group starts in the file.
	Pos Pos `json:"-"`
}

// Reconnect is a group's reconnect policy.
type Reconnect struct {
	// After is the wait before each reconnect attempt.
	After time.Duration `json:"after"`
	// Max is the number of reconnects per client (0 = unlimited).
	Max int `json:"max"`
}

// Will is a group's last-will message.
type Will struct {
	Topic   Template `json:"topic"`
	Payload string   `json:"payload"`
	QoS     byte     `json:"qos"`
	Retain  bool     `json:"retain"`
}

// Subscription is one topic filter a group subscribes to. The filter may
// use + and # wildcards and $share/<group>/<filter>.
type Subscription struct {
	Topic Template `json:"topic"`
	QoS   byte     `json:"qos"`
	// NoLocal (MQTT 5) asks the broker not to send the client its own
	// messages. A publishing group that subscribes to its own topics
	// then expects no copy of its own messages: the expectations leave
	// them out, so a broker that ignores the option shows as extra
	// deliveries rather than passing silently. Not allowed on $share.
	NoLocal bool `json:"no_local,omitempty"`
	// RetainAsPublished (MQTT 5) keeps the publisher's retain flag on
	// live deliveries. Without it a delivery with the retain flag set is
	// a stored retained message replayed at subscribe time, which the run
	// counts as foreign; with it, a replayed message of this run's counts
	// as a duplicate.
	RetainAsPublished bool `json:"retain_as_published,omitempty"`
	// RetainHandling (MQTT 5) says when the broker sends retained
	// messages at subscribe time: 0 always, 1 only for a subscription
	// that did not exist yet (not on a resumed session), 2 never.
	RetainHandling byte `json:"retain_handling,omitempty"`
	Pos            Pos  `json:"-"`
}

// Publish is a group's publishing: what, how big and how fast.
type Publish struct {
	// Topic is the topic template (no wildcards).
	Topic Template `json:"topic"`
	QoS   byte     `json:"qos"`
	// Size is the payload size in bytes, at least HeaderSize; with
	// Sizes, the largest of them; with Payload, 0 (the template's
	// rendering is the payload).
	Size int `json:"size"`
	// Sizes, when set, draws a binary payload's size per message.
	Sizes *SizeDist `json:"sizes,omitempty"`
	// Payload, when set, is the template the payload is rendered from
	// instead of binary padding.
	Payload *PayloadTemplate `json:"payload,omitempty"`
	// Header is where the measurement header goes: HeaderPrefix,
	// HeaderProperty or HeaderField.
	Header string `json:"header,omitempty"`
	// Every is the interval between one client's messages (per client).
	// Exactly one of Every and Rate is set.
	Every time.Duration `json:"every,omitempty"`
	// Rate is the whole group's messages per second, spread evenly over
	// its clients.
	Rate float64 `json:"rate,omitempty"`
	// Stages, instead of Every, Rate and Burst, are the group's own
	// targets over the plan's stage timeline (publish.stages,
	// group_stages.go): the same names and durations as the plan's
	// stages, this group's rates.
	Stages []Stage `json:"stages,omitempty"`
	// Burst, instead of Every and Rate, makes the group's clients report
	// together (burst.go).
	Burst *Burst `json:"burst,omitempty"`
	// Arrival is how messages spread at the rate: ArrivalUniform (also
	// when empty, in a plan built in Go) or ArrivalPoisson (arrival.go).
	Arrival string `json:"arrival,omitempty"`
	// StartDelay, when set, holds each client back from publishing by its
	// own seeded delay (start_delay.go).
	StartDelay *StartDelay `json:"start_delay,omitempty"`
	// Max (rate: max) replaces Every and Rate with a closed loop: each
	// client publishes its next message as soon as its window allows
	// (see closedloop.go). Every and Rate are then zero.
	Max bool `json:"max,omitempty"`
	// Inflight is the closed loop's window per client: the QoS 1/2
	// publishes awaiting their acknowledgement (0 with an open loop).
	Inflight int `json:"inflight,omitempty"`
	// Retain sets the retain flag.
	Retain bool `json:"retain"`
	// Count, when non-zero, stops each client after this many messages.
	Count int `json:"count,omitempty"`
	// ResponseTopic, when set, makes every message a request (MQTT 5):
	// it carries this topic, which the client subscribes to, and
	// correlation data, and each responder that receives it answers
	// there (reqresp.go). Zero for plain publishing.
	ResponseTopic Template `json:"response_topic,omitzero"`
	// ResponseTimeout is how long a request's answer may take before it
	// counts as a timeout (rtt.timeouts); set only with ResponseTopic.
	ResponseTimeout time.Duration `json:"response_timeout,omitempty"`
	Pos             Pos           `json:"-"`
}

// Interval returns the time between one client's messages at the target
// rate, for a group of n clients.
func (p *Publish) Interval(n int) time.Duration {
	if p.Every > 0 {
		return p.Every
	}
	if b := p.Burst; b != nil && b.Messages > 0 {
		// The mean: n clients share Messages every Every.
		return max(time.Duration(float64(b.Every)*float64(n)/float64(b.Messages)), 1)
	}
	if p.Rate <= 0 || n <= 0 {
		return 0
	}
	return time.Duration(float64(n) / p.Rate * float64(time.Second))
}

// ThresholdSource is a threshold as written, with its position, so that
// errors in it point into the file.
type ThresholdSource struct {
	Expr string `json:"expr"`
	Pos  Pos    `json:"-"`
}

// HeaderSize is the measurement header every payload starts with:
// publisher number (uint32), sequence (uint32), intended send time (int64).
const HeaderSize = 16
