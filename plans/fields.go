package plans

import "math"

// The field catalogue: every key of every mapping a plan file may hold,
// with how the loader reads its value, its bounds and its one-line doc.
// The loader's key lists (planKeys, groupKeys, ...) are taken from it,
// and Schema generates the JSON Schema from it, so that the keys an
// editor completes are the keys the loader accepts. The typed getters in
// load_decode.go still decide what a value means; the catalogue says what
// they accept, and the schema tests check both against the same plans.

// fieldKind is how the loader reads a field's value.
type fieldKind int

const (
	fieldText           fieldKind = iota // any scalar, read as text (str)
	fieldSecret                          // a password: text never printed
	fieldTemplate                        // a %c/%u/%i template (client id, user name, topic)
	fieldGroupName                       // letters, digits, _ and -
	fieldStageName                       // letters, digits, _ and -, not only digits
	fieldArrival                         // uniform or poisson
	fieldBrokerURL                       // embedded or scheme://host:port
	fieldBool                            // true or false
	fieldInt                             // a whole number in [min, max]
	fieldQoS                             // 0, 1 or 2
	fieldProtocol                        // 3, 4 or 5
	fieldRetainHandling                  // 0, 1 or 2
	fieldDuration                        // a Go duration: 10s, 1m30s, 250ms
	fieldRate                            // a rate: 500/s, 60/min, or a number per second
	fieldSize                            // a byte size: 1KB, 512B, 1024
	fieldSection                         // a mapping of fields; null is an empty one
	fieldURLList                         // broker.urls: a non-empty list of broker URLs
	fieldAddressList                     // broker.source_addresses: a list of IP addresses
	fieldGroupList                       // groups, stages: a non-empty list of mappings
	fieldSubscribe                       // a filter, a subscription mapping, or a list of either
	fieldExprList                        // thresholds: a list of expressions
	fieldPublishRate                     // publish.rate: a rate, or max (closed loop)
	fieldPayload                         // publish.payload: a payload template (payload.go)
	fieldHeader                          // publish.header: prefix, property or field
	fieldSizeDist                        // publish.size: a size, {min, max} or a list of {size, weight}
	fieldLifetime                        // lifetime: a duration or {min, max}
	fieldStageClients                    // a stage's clients: {group name: count}
	fieldShardStrategy                   // sharding.strategy: auto or stripe
	fieldDrain                           // drain: a duration or {max, quiet}
	fieldDisturbance                     // disturbance: inconclusive or fail
)

// planField is one key of a mapping in a plan file.
type planField struct {
	name string
	kind fieldKind
	doc  string
	// min and max bound fieldInt (and fieldSize) values.
	min, max int64
	// positive refuses 0 for a duration or rate.
	positive bool
	// required: the loader reports the key's absence.
	required bool
	// sec is the mapping of a fieldSection, or of one item of a
	// fieldGroupList or fieldSubscribe.
	sec *planSection
}

// planSection is one mapping of a plan file: its keys in the order the
// docs and messages list them, and the presence rules between them that
// the loader checks.
type planSection struct {
	// name names the section in the schema's $defs.
	name string
	doc  string
	// extensions allows keys starting with "x-", which the loader skips
	// (a place for YAML anchors).
	extensions bool
	fields     []planField
	// notBoth lists pairs of keys that must not both be present.
	notBoth [][2]string
	// oneOf lists keys of which exactly one must be present.
	oneOf []string
	// anyOf lists keys of which at least one must be present.
	anyOf []string
}

// keys returns the section's key names, the list the loader checks a
// mapping against.
func (s *planSection) keys() []string {
	out := make([]string, len(s.fields))
	for i, f := range s.fields {
		out[i] = f.name
	}
	return out
}

var tlsSection = &planSection{
	name: "tls",
	doc:  "TLS settings for mqtts:// and wss:// brokers. File paths are relative to the plan file.",
	fields: []planField{
		{name: "ca", kind: fieldText, doc: "PEM file of the certificate authorities that sign the broker's certificate (default: the system's)."},
		{name: "cert", kind: fieldText, doc: "PEM client certificate for mutual TLS; needs key."},
		{name: "key", kind: fieldText, doc: "PEM private key of cert; needs cert."},
		{name: "server_name", kind: fieldText, doc: "The name the broker's certificate must hold (default: the URL's host)."},
		{name: "insecure_skip_verify", kind: fieldBool, doc: "Accept any broker certificate: for tests only."},
	},
}

var brokerMetricsSection = &planSection{
	name: "metrics",
	doc:  "The broker's own figures in the report: its $SYS counters (sys), its process's CPU and memory on this machine (pid or process), its Prometheus endpoint (prometheus); any combination, at least one.",
	fields: []planField{
		{name: "sys", kind: fieldBool, doc: "Subscribe to $SYS/# on one extra connection, counted nowhere in the plan's figures, for the broker's own counters (broker.clients.max, broker.publish.*, broker.dropped, broker.memory.max)."},
		{name: "pid", kind: fieldInt, min: 1, max: maxPID, doc: "The broker's process id, to sample its CPU and memory from /proc. Not with process."},
		{name: "process", kind: fieldText, doc: "The broker's command name as /proc/PID/comm holds it (mosquitto, beam.smp); exactly one process must have it when the run starts. Not with pid."},
		{name: "prometheus", kind: fieldText, doc: "An http:// or https:// URL of the broker's Prometheus text exposition (EMQX: http://host:18083/api/v5/prometheus/stats), scraped once a second for the same counters as sys."},
	},
	notBoth: [][2]string{{"pid", "process"}},
	anyOf:   []string{"sys", "pid", "process", "prometheus"},
}

var brokerSection = &planSection{
	name: "broker",
	doc:  "Where clients connect; absent means the embedded in-process broker.",
	fields: []planField{
		{name: "url", kind: fieldBrokerURL, doc: "The broker: embedded, mqtt://host:1883, mqtts://host:8883, ws://host:8083/mqtt or wss://host/mqtt. mqtt://user:password@host gives the login of every group that sets no username or password of its own (percent-encode /, ?, #, @, % and spaces); it is never shown."},
		{name: "urls", kind: fieldURLList, doc: "A cluster's URLs: clients are spread over them round-robin. Set url or urls, not both."},
		{name: "protocol", kind: fieldProtocol, doc: "MQTT version: 3 (3.1), 4 (3.1.1) or 5 (5.0, the default)."},
		{name: "connect_timeout", kind: fieldDuration, positive: true, doc: "How long a CONNECT may wait for its CONNACK (default 10s)."},
		{name: "tls", kind: fieldSection, sec: tlsSection, doc: tlsSection.doc},
		{name: "source_addresses", kind: fieldAddressList, doc: "Local IP addresses clients connect from, round-robin per client (past the 64k-port limit of one address)."},
		{name: "metrics", kind: fieldSection, sec: brokerMetricsSection, doc: brokerMetricsSection.doc},
	},
	notBoth: [][2]string{{"url", "urls"}},
}

var reconnectSection = &planSection{
	name: "reconnect",
	doc:  "A dropped client reconnects (resuming its session if clean_start is false).",
	fields: []planField{
		{name: "after", kind: fieldDuration, positive: true, doc: "Wait before reconnecting (default 1s)."},
		{name: "max", kind: fieldInt, min: 0, max: math.MaxInt32, doc: "Reconnections per client at most; 0 means no limit."},
	},
}

var willSection = &planSection{
	name: "will",
	doc:  "The will message the broker publishes when a client drops.",
	fields: []planField{
		{name: "topic", kind: fieldTemplate, required: true, doc: "The will's topic; %c, %u and %i expand per client."},
		{name: "payload", kind: fieldText, doc: "The will's payload."},
		{name: "qos", kind: fieldQoS, doc: "The will's QoS: 0, 1 or 2 (default 0)."},
		{name: "retain", kind: fieldBool, doc: "Publish the will retained."},
	},
}

var subscriptionSection = &planSection{
	name: "subscription",
	doc:  "One subscription: a topic filter with its QoS and MQTT 5 options.",
	fields: []planField{
		{name: "topic", kind: fieldTemplate, required: true, doc: "The topic filter: wildcards + and #, $share/<group>/<filter>; %c, %u and %i expand per client."},
		{name: "qos", kind: fieldQoS, doc: "The maximum QoS asked for: 0, 1 or 2 (default 0)."},
		{name: "no_local", kind: fieldBool, doc: "MQTT 5: do not receive the client's own publishes (not on a shared subscription)."},
		{name: "retain_as_published", kind: fieldBool, doc: "MQTT 5: keep the retain flag as published."},
		{name: "retain_handling", kind: fieldRetainHandling, doc: "MQTT 5: 0 sends retained messages at every subscribe, 1 only for a new subscription, 2 never."},
	},
}

var publishSection = &planSection{
	name: "publish",
	doc:  "What each client of the group publishes, and how often.",
	fields: []planField{
		{name: "topic", kind: fieldTemplate, required: true, doc: "The topic: %c client id, %u user name, %i sequence number, %% a literal %."},
		{name: "qos", kind: fieldQoS, doc: "0, 1 or 2 (default 0)."},
		{name: "size", kind: fieldSizeDist, min: HeaderSize, max: maxPayloadSize, doc: "Payload bytes (B, KB=1000, KiB=1024, MB, MiB, GB, GiB; default 256); at least 16, the measurement header. {min, max} draws a uniform size per message, a list of {size, weight} a weighted one (seeded: the receiver knows each message's size). Not with payload."},
		{name: "payload", kind: fieldPayload, doc: "A payload template that real consumers parse, like JSON: %c %u %i, %s sequence, %t send time (Unix ms), %T (RFC 3339), %h the header, %{int:LO:HI}, %{float:LO:HI:D}, %{choice:A|B}, %{hex:N}; rendered per message, checked byte for byte on receipt."},
		{name: "header", kind: fieldHeader, doc: "Where the measurement header goes: prefix (16 binary bytes first; the default on MQTT 3.1.1), property (an MQTT 5 user property, so the payload is the template alone; the default on MQTT 5 when every subscribing group speaks it) or field (the template's %h; the default when it has one)."},
		{name: "every", kind: fieldDuration, positive: true, doc: "Each client publishes once every this long. Set every, rate or burst, exactly one (none when the plan has stages, which give the rate)."},
		{name: "rate", kind: fieldPublishRate, positive: true, doc: "The whole group's messages per second together (500/s, 60/min, 2/ms), or max: each client publishes as soon as its inflight window allows (a closed loop; needs duration). Set every, rate or burst, exactly one (none when the plan has stages, which give the rate)."},
		{name: "burst", kind: fieldSection, sec: burstSection, doc: burstSection.doc},
		{name: "stages", kind: fieldGroupList, sec: stageSection, doc: "Instead of every, rate and burst: this group's own targets over the plan's stages, a list of {name, duration, rate or every} with the same names and durations as the plan's stages (or, without them, as every other group's publish.stages); rate is this group's messages per second. Lets groups follow one timeline at different rates."},
		{name: "arrival", kind: fieldArrival, doc: "How messages spread at the rate: uniform (evenly, clients staggered; the default) or poisson (exponential gaps, seeded by the plan's seed). Not with burst."},
		{name: "start_delay", kind: fieldSection, sec: startDelaySection, doc: startDelaySection.doc},
		{name: "retain", kind: fieldBool, doc: "Publish retained."},
		{name: "count", kind: fieldInt, min: 0, max: math.MaxInt32, doc: "Stop each client after this many messages; 0 means no limit."},
		{name: "response_topic", kind: fieldTemplate, doc: "MQTT 5: every message is a request carrying this response topic (the client subscribes to it) and correlation data; responder groups answer there, measured as rtt.*. %c, %u and %i expand per client."},
		{name: "response_timeout", kind: fieldDuration, positive: true, doc: "With response_topic: an answer later than this after the request's intended send time counts in rtt.timeouts (default 5s)."},
		{name: "inflight", kind: fieldInt, min: 1, max: MaxInflight, doc: "With rate: max and QoS 1/2: the unacknowledged publishes one client keeps in flight (default 1, as emqtt-bench); the broker's Receive Maximum may lower it."},
	},
	// Exactly one without stages, neither with them: the schema, which
	// sees one section at a time, can only say "not both".
	notBoth: [][2]string{{"every", "rate"}, {"every", "burst"}, {"rate", "burst"}, {"arrival", "burst"}, {"start_delay", "burst"}, {"stages", "every"}, {"stages", "rate"}, {"stages", "burst"}},
}

var burstSection = &planSection{
	name: "burst",
	doc:  "Instead of every or rate: the group's clients report together, messages at once every this long (spread over the clients round-robin, all intended at the burst's instant). Not with stages.",
	fields: []planField{
		{name: "every", kind: fieldDuration, positive: true, required: true, max: int64(maxTimeline), doc: "The time between two bursts; the first is at the start of warmup."},
		{name: "messages", kind: fieldInt, min: 1, max: maxBurstMessages, required: true, doc: "The messages of one burst, the whole group together."},
	},
}

var stageSection = &planSection{
	name: "stage",
	doc:  "One stage of the publish rate: over its duration the rate moves linearly from the previous stage's target (the first from 0) to this one's.",
	fields: []planField{
		{name: "name", kind: fieldStageName, doc: "The stage's name in explain: letters, digits, _ and -, not only digits (default: its index, from 0)."},
		{name: "duration", kind: fieldDuration, required: true, max: int64(maxTimeline), doc: "How long the stage lasts; 0s jumps to its target."},
		{name: "rate", kind: fieldRate, doc: "The target for each publishing group, its messages per second together (0/s stops). Set rate or every, exactly one."},
		{name: "every", kind: fieldDuration, positive: true, max: int64(maxTimeline), doc: "The target as each client's interval. Set rate or every, exactly one."},
		{name: "clients", kind: fieldStageClients, doc: "By group name, the group's connected clients at the end of the stage, reached linearly from the previous stage's (before the stages, all): {devices: 200}. The highest-numbered client leaves first and the lowest-numbered returns first; a client away skips its messages, a kept session queues them."},
	},
	oneOf: []string{"rate", "every"},
}

var respondSection = &planSection{
	name: "respond",
	doc:  "MQTT 5: the group's clients are responders: each subscribes to its command topic and answers every request it receives on the request's response topic, with its correlation data, at QoS 0.",
	fields: []planField{
		{name: "topic", kind: fieldTemplate, required: true, doc: "The command topic filter each client subscribes to; %c, %u and %i expand per client (cmd/%i pairs requester i with responder i)."},
		{name: "qos", kind: fieldQoS, doc: "The QoS of the command subscription: 0, 1 or 2 (default 0). Answers go at QoS 0."},
		{name: "size", kind: fieldSize, min: answerMinSize, max: maxPayloadSize, doc: "Answer payload bytes: the responder's number, then padding (default 16, at least 4)."},
	},
}

var sizeRangeSection = &planSection{
	name: "size_range",
	doc:  "A uniform payload size per message, from min to max bytes.",
	fields: []planField{
		{name: "min", kind: fieldSize, min: HeaderSize, max: maxPayloadSize, required: true, doc: "The smallest size, at least 16 bytes."},
		{name: "max", kind: fieldSize, min: HeaderSize, max: maxPayloadSize, required: true, doc: "The largest size, at least min."},
	},
}

var drainRangeSection = &planSection{
	name: "drain_range",
	doc:  "Drain that keeps listening while deliveries arrive: it ends once every expected delivery is in, once no new delivery or acknowledgement has arrived for quiet, or at max.",
	fields: []planField{
		{name: "max", kind: fieldDuration, positive: true, required: true, doc: "The longest drain may last."},
		{name: "quiet", kind: fieldDuration, positive: true, doc: "End drain once no new delivery or acknowledgement has arrived for this long, counted from the start of drain or the last of them (default 1s; at most max)."},
	},
}

var lifetimeRangeSection = &planSection{
	name: "lifetime_range",
	doc:  "A session length drawn uniformly per session, from min to max (seeded by the plan's seed and the client).",
	fields: []planField{
		{name: "min", kind: fieldDuration, positive: true, required: true, doc: "The shortest session."},
		{name: "max", kind: fieldDuration, positive: true, required: true, doc: "The longest session, at least min."},
	},
}

var sizeChoiceSection = &planSection{
	name: "size_choice",
	doc:  "One size of a weighted list: drawn with probability weight/(sum of weights).",
	fields: []planField{
		{name: "size", kind: fieldSize, min: HeaderSize, max: maxPayloadSize, required: true, doc: "The payload size, at least 16 bytes."},
		{name: "weight", kind: fieldInt, min: 1, max: maxSizeWeight, doc: "The relative weight (default 1)."},
	},
}

var groupSection = &planSection{
	name: "group",
	doc:  "A group of identical clients: how they connect, subscribe and publish.",
	fields: []planField{
		{name: "name", kind: fieldGroupName, required: true, doc: "The group's name in reports and thresholds (groups.<name>): letters, digits, _ and -."},
		{name: "count", kind: fieldInt, min: 1, max: maxGroupCount, doc: "Clients in the group (default 1)."},
		{name: "start", kind: fieldInt, min: 0, max: maxGroupStart, doc: "The first %i (default 1)."},
		{name: "client_id", kind: fieldTemplate, doc: "Client id template with %i and %u (default: unique per run and group)."},
		{name: "username", kind: fieldTemplate, doc: "User name template with %i; %u expands to it."},
		{name: "password", kind: fieldSecret, doc: "Password; write ${VAR} to take it from the environment. Never printed."},
		{name: "keepalive", kind: fieldDuration, max: int64(maxKeepalive), doc: "MQTT keepalive, whole seconds (default 60s, at most 65535s)."},
		{name: "clean_start", kind: fieldBool, doc: "Start with a new session (default true); false resumes a kept one."},
		{name: "session_expiry", kind: fieldDuration, max: int64(maxSessionExpiry), doc: "MQTT 5 session expiry, whole seconds (default 0s)."},
		{name: "connect_rate", kind: fieldRate, doc: "The group's connection ramp, connections per second (default 1000/s; 0 connects all at once). Set connect_rate or connect_every, not both."},
		{name: "connect_every", kind: fieldDuration, positive: true, doc: "One connection every this long (at most 1h). Set connect_rate or connect_every, not both."},
		{name: "reconnect", kind: fieldSection, sec: reconnectSection, doc: reconnectSection.doc},
		{name: "lifetime", kind: fieldLifetime, doc: lifetimeDoc},
		{name: "churn", kind: fieldRate, positive: true, doc: churnDoc},
		{name: "away", kind: fieldDuration, doc: awayDoc},
		{name: "will", kind: fieldSection, sec: willSection, doc: willSection.doc},
		{name: "protocol", kind: fieldProtocol, doc: "MQTT version for this group: 3, 4 or 5 (default: broker.protocol)."},
		{name: "subscribe", kind: fieldSubscribe, sec: subscriptionSection, doc: "One topic filter, one {topic, qos, ...} mapping, or a list of either."},
		{name: "publish", kind: fieldSection, sec: publishSection, doc: publishSection.doc},
		{name: "respond", kind: fieldSection, sec: respondSection, doc: respondSection.doc},
	},
	notBoth: [][2]string{{"connect_rate", "connect_every"}, {"subscribe", "respond"}, {"lifetime", "churn"}},
}

var shardingSection = &planSection{
	name: "sharding",
	doc:  "How a run split over several processes or machines (mqplan explain --shards N) divides the clients: every shard compiles the whole plan, so client ids, topics and %i are the same whatever the number of shards.",
	fields: []planField{
		{name: "strategy", kind: fieldShardStrategy, doc: "auto (the default) keeps each publisher with the clients it reaches, so that their latency is measured on one clock, keeps $share groups whole and balances connections and messages; stripe puts client i on shard i mod N whatever the topology (a $share group on its first member's shard)."},
	},
}

var planSectionTop = &planSection{
	name:       "plan",
	doc:        "An mqplan test plan: the broker, the client groups, the phases and the thresholds that decide the verdict.",
	extensions: true,
	fields: []planField{
		{name: "name", kind: fieldText, doc: "The plan's name in reports (default: the file name without extension)."},
		{name: "description", kind: fieldText, doc: "Shown in the report."},
		{name: "broker", kind: fieldSection, sec: brokerSection, doc: brokerSection.doc},
		{name: "groups", kind: fieldGroupList, sec: groupSection, required: true, doc: "The topology: who connects, subscribes and publishes. At least one group."},
		{name: "warmup", kind: fieldDuration, doc: "Publishing, not measured (default 0s): at the target rate, or with a ramp the first part of its rise."},
		{name: "ramp", kind: fieldDuration, doc: "The publish rate grows linearly from 0 at the start of warmup to its target at the end of the ramp, never falling back (default 0s). Not with stages."},
		{name: "duration", kind: fieldDuration, positive: true, doc: "The measured steady phase; required unless every publishing group has a publish.count, or the plan has stages."},
		{name: "stages", kind: fieldGroupList, sec: stageSection, doc: "The publish rate over time, k6-style: a list of {name, duration, rate or every}, each reached linearly from the previous; together the measured phase. The rate applies to every publishing group, which then gives no rate or every. Not with ramp or duration."},
		{name: "seed", kind: fieldInt, min: 0, max: maxSeed, doc: "Seeds every random draw of the plan (default 1): poisson arrivals, payload templates and sizes, random lifetimes. The same seed gives the same schedule, payloads and timetable, so a run is repeatable, explain exact, and the receiver regenerates each payload to check it."},
		{name: "drain", kind: fieldDrain, doc: drainDoc},
		{name: "thresholds", kind: fieldExprList, doc: "Expressions that must all hold, else exit code 1, like p99 < 10ms."},
		{name: "sharding", kind: fieldSection, sec: shardingSection, doc: shardingSection.doc},
		{name: "disturbance", kind: fieldDisturbance, doc: "What a run whose only failures are latency thresholds that mqplan's own lack of CPU explains gets: inconclusive (the default: verdict INCONCLUSIVE, exit code 4) or fail (judged as any other failure, exit code 1)."},
	},
}

// The keys of each section, in the order the messages list them.
var (
	planKeys      = planSectionTop.keys()
	brokerKeys    = brokerSection.keys()
	metricsKeys   = brokerMetricsSection.keys()
	tlsKeys       = tlsSection.keys()
	groupKeys     = groupSection.keys()
	reconnectKeys = reconnectSection.keys()
	willKeys      = willSection.keys()
	subKeys       = subscriptionSection.keys()
	publishKeys   = publishSection.keys()
	respondKeys   = respondSection.keys()
	stageKeys     = stageSection.keys()
	burstKeys     = burstSection.keys()
	sizeRangeKeys = sizeRangeSection.keys()
	lifeRangeKeys = lifetimeRangeSection.keys()
	drainKeys     = drainRangeSection.keys()
	sizeKeys      = sizeChoiceSection.keys()
	shardingKeys  = shardingSection.keys()
)
