package report

import (
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/plans"
)

// The JSON report's document types. The conventions WriteJSON documents
// (durations as strings, NaN and ±Inf as null, lists never null) are kept
// here, at the boundary, by the types themselves, so that the standard
// encoder writes the document as it is.

// jsonDuration is a duration written as its Go string ("1.5ms", "0s"), the
// syntax thresholds are written in, exact to the nanosecond and readable by
// time.ParseDuration.
type jsonDuration time.Duration

// MarshalJSON writes d as a quoted Go duration string.
func (d jsonDuration) MarshalJSON() ([]byte, error) {
	return strconv.AppendQuote(nil, time.Duration(d).String()), nil
}

// optDuration is a duration, or null when absent (no samples).
func optDuration(d *time.Duration) *jsonDuration {
	if d == nil {
		return nil
	}
	j := jsonDuration(*d)
	return &j
}

// list returns s, or an empty slice for nil, so that a list is [] rather
// than null and its type never changes between runs.
func list[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// jsonMetricSet is a metric set with each value in its JSON form: a
// duration as a string, a non-finite rate as null.
type jsonMetricSet map[string]any

// metricSetJSON converts a set the thresholds read to its JSON form; a
// nil set becomes {}.
func metricSetJSON(m metric.Set) jsonMetricSet {
	out := make(jsonMetricSet, len(m))
	for k, v := range m {
		out[string(k)] = valueJSON(v)
	}
	return out
}

// metricSetsJSON converts a map of named metric sets; nil becomes {}.
func metricSetsJSON(m map[string]metric.Set) map[string]jsonMetricSet {
	out := make(map[string]jsonMetricSet, len(m))
	for k, v := range m {
		out[k] = metricSetJSON(v)
	}
	return out
}

// valueJSON converts one metric value (an int, a float64 or a
// time.Duration, see metric.Kind) to its JSON form.
func valueJSON(v any) any {
	switch x := v.(type) {
	case time.Duration:
		return jsonDuration(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	}
	return v
}

// The plan echo: the plan as run, with its durations as strings. Types
// without durations (TLS, Will, Subscription, ThresholdSource) are written
// as they are; TestJSONPlanMirrorsPlan keeps these mirrors complete.

type jsonPlan struct {
	File        string                  `json:"file"`
	Name        string                  `json:"name"`
	Description string                  `json:"description,omitempty"`
	Broker      jsonPlanBroker          `json:"broker"`
	Groups      []jsonPlanGroup         `json:"groups"`
	Warmup      jsonDuration            `json:"warmup"`
	Ramp        jsonDuration            `json:"ramp"`
	Duration    jsonDuration            `json:"duration"`
	Stages      []jsonPlanStage         `json:"stages,omitempty"`
	Drain       jsonDuration            `json:"drain"`
	DrainQuiet  jsonDuration            `json:"drain_quiet,omitempty"`
	Thresholds  []plans.ThresholdSource `json:"thresholds,omitempty"`
	Seed        uint64                  `json:"seed,omitempty"`
	Sharding    *plans.Sharding         `json:"sharding,omitempty"`
	Disturbance string                  `json:"disturbance,omitempty"`
}

type jsonPlanBroker struct {
	URLs            []string     `json:"urls"`
	Protocol        int          `json:"protocol"`
	ConnectTimeout  jsonDuration `json:"connect_timeout"`
	TLS             *plans.TLS   `json:"tls,omitempty"`
	SourceAddresses []string     `json:"source_addresses,omitempty"`
	// Metrics is the broker process the run sampled (pid or process).
	Metrics *plans.BrokerMetrics `json:"metrics,omitempty"`
}

type jsonPlanGroup struct {
	Name          string               `json:"name"`
	Count         int                  `json:"count"`
	Start         int                  `json:"start"`
	ClientID      plans.Template       `json:"client_id"`
	Username      plans.Template       `json:"username,omitempty"`
	Password      plans.Secret         `json:"password,omitempty"`
	Keepalive     jsonDuration         `json:"keepalive"`
	CleanStart    bool                 `json:"clean_start"`
	SessionExpiry jsonDuration         `json:"session_expiry"`
	ConnectRate   float64              `json:"connect_rate"`
	Reconnect     *jsonPlanReconnect   `json:"reconnect,omitempty"`
	Churn         *jsonPlanChurn       `json:"churn,omitempty"`
	Will          *plans.Will          `json:"will,omitempty"`
	Protocol      int                  `json:"protocol"`
	Subscribe     []plans.Subscription `json:"subscribe,omitempty"`
	Publish       *jsonPlanPublish     `json:"publish,omitempty"`
	Respond       *plans.Respond       `json:"respond,omitempty"`
}

type jsonPlanReconnect struct {
	After jsonDuration `json:"after"`
	Max   int          `json:"max"`
}

// jsonPlanChurn is a group's lifetime or churn (plans.Churn), durations
// written as the plan writes them.
type jsonPlanChurn struct {
	Lifetime jsonDuration `json:"lifetime,omitempty"`
	// LifetimeMax is a random lifetime's longest (lifetime: {min, max}).
	LifetimeMax jsonDuration `json:"lifetime_max,omitempty"`
	Rate        float64      `json:"rate,omitempty"`
	Away        jsonDuration `json:"away"`
}

type jsonPlanPublish struct {
	Topic plans.Template `json:"topic"`
	QoS   byte           `json:"qos"`
	Size  int            `json:"size"`
	// Sizes, Payload and Header echo a drawn publish.size,
	// publish.payload and publish.header (absent for a fixed binary
	// payload).
	Sizes   *plans.SizeDist        `json:"sizes,omitempty"`
	Payload *plans.PayloadTemplate `json:"payload,omitempty"`
	Header  string                 `json:"header,omitempty"`
	Every   jsonDuration           `json:"every,omitempty"`
	Rate    float64                `json:"rate,omitempty"`
	// Stages echoes the group's own publish.stages.
	Stages  []jsonPlanStage `json:"stages,omitempty"`
	Burst   *jsonPlanBurst  `json:"burst,omitempty"`
	Arrival string          `json:"arrival,omitempty"`
	// StartDelay echoes publish.start_delay.
	StartDelay *jsonPlanStartDelay `json:"start_delay,omitempty"`
	// Max and Inflight: the closed loop (publish.rate: max).
	Max      bool `json:"max,omitempty"`
	Inflight int  `json:"inflight,omitempty"`
	Retain   bool `json:"retain"`
	Count    int  `json:"count,omitempty"`
	// ResponseTopic and ResponseTimeout make the messages requests.
	ResponseTopic   plans.Template `json:"response_topic,omitzero"`
	ResponseTimeout jsonDuration   `json:"response_timeout,omitempty"`
}

// jsonPlanStage mirrors plans.Stage.
type jsonPlanStage struct {
	Name     string       `json:"name"`
	Duration jsonDuration `json:"duration"`
	Rate     float64      `json:"rate,omitempty"`
	Every    jsonDuration `json:"every,omitempty"`
	// Clients is the stage's connected clients by group (stage clients).
	Clients map[string]int `json:"clients,omitempty"`
}

// jsonPlanStartDelay mirrors plans.StartDelay.
type jsonPlanStartDelay struct {
	Min jsonDuration `json:"min"`
	Max jsonDuration `json:"max"`
}

// jsonPlanBurst mirrors plans.Burst.
type jsonPlanBurst struct {
	Every    jsonDuration `json:"every"`
	Messages int          `json:"messages"`
}

// planJSON converts the plan for the echo, with credentials in its broker
// URLs hidden. Passwords need nothing: plans.Secret marshals masked.
func planJSON(p *plans.Plan) *jsonPlan {
	if p == nil {
		return nil
	}
	jp := &jsonPlan{
		File: p.File, Name: p.Name, Description: p.Description,
		Broker: jsonPlanBroker{
			URLs:            make([]string, len(p.Broker.URLs)),
			Protocol:        p.Broker.Protocol,
			ConnectTimeout:  jsonDuration(p.Broker.ConnectTimeout),
			TLS:             p.Broker.TLS,
			SourceAddresses: p.Broker.SourceAddresses,
			Metrics:         p.Broker.Metrics,
		},
		Groups: make([]jsonPlanGroup, len(p.Groups)),
		Warmup: jsonDuration(p.Warmup), Ramp: jsonDuration(p.Ramp),
		Duration: jsonDuration(p.Duration), Drain: jsonDuration(p.Drain), DrainQuiet: jsonDuration(p.DrainQuiet),
		Thresholds: p.Thresholds, Seed: p.Seed, Sharding: p.Sharding, Disturbance: p.Disturbance,
	}
	jp.Stages = stagesJSON(p.Stages)
	for i, u := range p.Broker.URLs {
		jp.Broker.URLs[i] = redactURL(u)
	}
	if m := p.Broker.Metrics; m != nil && m.Prometheus != "" {
		// The endpoint's credentials (user information, a token in its
		// query) are not the report's to show.
		c := *m
		c.Prometheus = plans.RedactEndpoint(c.Prometheus)
		jp.Broker.Metrics = &c
	}
	for i := range p.Groups {
		g := &p.Groups[i]
		jg := jsonPlanGroup{
			Name: g.Name, Count: g.Count, Start: g.Start,
			ClientID: g.ClientID, Username: g.Username, Password: g.Password,
			Keepalive: jsonDuration(g.Keepalive), CleanStart: g.CleanStart,
			SessionExpiry: jsonDuration(g.SessionExpiry), ConnectRate: g.ConnectRate,
			Will: g.Will, Protocol: g.Protocol, Subscribe: g.Subscribe,
		}
		if g.LoginUser {
			// The run's login, not the plan's: see plans.Group.
			jg.Username = plans.Template{}
		}
		if rc := g.Reconnect; rc != nil {
			jg.Reconnect = &jsonPlanReconnect{After: jsonDuration(rc.After), Max: rc.Max}
		}
		if ch := g.Churn; ch != nil {
			jg.Churn = &jsonPlanChurn{Lifetime: jsonDuration(ch.Lifetime), LifetimeMax: jsonDuration(ch.LifetimeMax), Rate: ch.Rate, Away: jsonDuration(ch.Away)}
		}
		if pub := g.Publish; pub != nil {
			jg.Publish = &jsonPlanPublish{Topic: pub.Topic, QoS: pub.QoS, Size: pub.Size,
				Every: jsonDuration(pub.Every), Rate: pub.Rate, Arrival: pub.Arrival, Max: pub.Max, Inflight: pub.Inflight, Retain: pub.Retain, Count: pub.Count,
				ResponseTopic: pub.ResponseTopic, ResponseTimeout: jsonDuration(pub.ResponseTimeout),
				Payload: pub.Payload, Header: pub.Header, Sizes: pub.Sizes}
			if b := pub.Burst; b != nil {
				jg.Publish.Burst = &jsonPlanBurst{Every: jsonDuration(b.Every), Messages: b.Messages}
			}
			if d := pub.StartDelay; d != nil {
				jg.Publish.StartDelay = &jsonPlanStartDelay{Min: jsonDuration(d.Min), Max: jsonDuration(d.Max)}
			}
			jg.Publish.Stages = stagesJSON(pub.Stages)
		}
		jg.Respond = g.Respond
		jp.Groups[i] = jg
	}
	return jp
}

// The encoder must be the standard one: a compile-time reminder that the
// document types above are all it needs.
var _ json.Marshaler = jsonDuration(0)
