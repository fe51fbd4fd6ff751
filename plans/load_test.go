package plans

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/golden"
)

// Fixtures are named relative to this package's directory, so that
// positions in golden files do not depend on where the checkout is.
const (
	validDir   = "../testdata/plans/valid"
	invalidDir = "../testdata/plans/invalid"
	goldenDir  = "../testdata/golden/load"
)

// testEnv is the environment the loader tests see: never the real one,
// so that a developer's variables cannot change the results.
var testEnv = map[string]string{
	"MQTT_PASSWORD": "s3cret",
	"PLAN_NAME":     "env-plan",
	"BROKER_HOST":   "broker.example",
	"SUBS":          "25",
	"QOS":           "1",
	"EMPTY_USER":    "",
	"REGION":        "us",
}

func lookupTestEnv(name string) (string, bool) {
	v, ok := testEnv[name]
	return v, ok
}

func loadFixture(t *testing.T, path string, sets ...string) *Plan {
	t.Helper()
	p, err := Load(path, LoadOptions{LookupEnv: lookupTestEnv, Sets: sets})
	if err != nil {
		t.Fatalf("Load(%s): unexpected error:\n%v", path, err)
	}
	return p
}

// at is a position in a valid fixture.
func at(file string, line, col int) Pos {
	return Pos{File: filepath.Join(validDir, file), Line: line, Col: col}
}

// samePlan compares plans, positions included; Template and Secret
// compare by their parsed form, which DeepEqual sees.
func samePlan(t *testing.T, got, want *Plan) {
	t.Helper()
	// The thresholds Load compiled are derived from the plan, not written
	// in it (TestThresholdsCompiledOnce checks them).
	stripped := *got
	stripped.compiled = nil
	got = &stripped
	if reflect.DeepEqual(got, want) {
		return
	}
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	if string(g) != string(w) {
		t.Errorf("plan differs:\ngot  %s\nwant %s", g, w)
		return
	}
	// Same JSON: the difference is in a field JSON leaves out.
	t.Errorf("plan differs outside its JSON form (positions or secrets):\ngot  %+v\nwant %+v", got, want)
	if !reflect.DeepEqual(got.Broker, want.Broker) {
		t.Errorf("broker: got %+v, want %+v", got.Broker, want.Broker)
	}
	for i := range min(len(got.Groups), len(want.Groups)) {
		if !reflect.DeepEqual(got.Groups[i], want.Groups[i]) {
			t.Errorf("groups[%d]:\ngot  %+v\nwant %+v", i, got.Groups[i], want.Groups[i])
		}
	}
}

func tmpl(s string) Template { return MustTemplate(s) }

// TestLoadValid loads one valid plan per feature and checks the decoded
// plan, defaults included.
func TestLoadValid(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		sets  []string
		check func(t *testing.T, p *Plan)
	}{
		{
			// Every default in one place: a change of default must show here.
			name: "minimal plan gets every default",
			file: "minimal.yaml",
			check: func(t *testing.T, p *Plan) {
				samePlan(t, p, &Plan{
					File: filepath.Join(validDir, "minimal.yaml"),
					Name: "minimal",
					Broker: Broker{
						URLs:           []string{Embedded},
						Protocol:       5,
						ConnectTimeout: 10 * time.Second,
						Pos:            at("minimal.yaml", 2, 1),
					},
					Groups: []Group{{
						Name:        "pub",
						Count:       1,
						Start:       1,
						Keepalive:   60 * time.Second,
						CleanStart:  true,
						ConnectRate: 1000,
						Protocol:    5,
						Publish: &Publish{
							Topic: tmpl("bench/%i"),
							Size:  256,
							Every: time.Second,
							Pos:   at("minimal.yaml", 5, 7),
						},
						Pos: at("minimal.yaml", 3, 5),
					}},
					Duration: 10 * time.Second,
					Drain:    5 * time.Second,
					Seed:     DefaultSeed,
				})
				if !p.Groups[0].ClientID.IsZero() {
					t.Errorf("client_id: got %q, want the zero template (the compiler's run-unique default)", p.Groups[0].ClientID)
				}
			},
		},
		{
			name: "sharding strategy",
			file: "sharding.yaml",
			check: func(t *testing.T, p *Plan) {
				if p.Sharding == nil || p.Sharding.Strategy != ShardingStripe || p.Sharding.Pos != at("sharding.yaml", 11, 3) {
					t.Errorf("sharding %+v", p.Sharding)
				}
			},
		},
		{
			name: "the whole plan of plan-format.md",
			file: "spec.yaml",
			check: func(t *testing.T, p *Plan) {
				dir := validDir
				samePlan(t, p, &Plan{
					File:        filepath.Join(dir, "spec.yaml"),
					Name:        "1to1-qos1",
					Description: "One-to-one QoS 1: every publisher has its own subscriber on its own topic.",
					Broker: Broker{
						URLs:           []string{Embedded},
						Protocol:       5,
						ConnectTimeout: 10 * time.Second,
						TLS: &TLS{
							CA:         filepath.Join(dir, "certs/ca.pem"),
							Cert:       filepath.Join(dir, "certs/client.pem"),
							Key:        filepath.Join(dir, "certs/client.key"),
							ServerName: "broker.local",
						},
						SourceAddresses: []string{"127.0.0.2", "127.0.0.3"},
						Pos:             at("spec.yaml", 7, 3),
					},
					Groups: []Group{
						{
							Name:        "sub",
							Count:       100,
							Start:       1,
							ClientID:    tmpl("sub-%i"),
							Username:    tmpl("user-%i"),
							Password:    "s3cret",
							Keepalive:   60 * time.Second,
							CleanStart:  true,
							ConnectRate: 500,
							Reconnect:   &Reconnect{After: time.Second, Max: 5},
							Will:        &Will{Topic: tmpl("wills/%c"), Payload: "gone", QoS: 1},
							Protocol:    4,
							Subscribe:   []Subscription{{Topic: tmpl("bench/%i"), QoS: 1, Pos: at("spec.yaml", 34, 9)}},
							Pos:         at("spec.yaml", 20, 5),
						},
						{
							Name:        "pub",
							Count:       100,
							Start:       1,
							ClientID:    tmpl("pub-%i"),
							Keepalive:   60 * time.Second,
							CleanStart:  true,
							ConnectRate: 500,
							Protocol:    5,
							Publish: &Publish{
								Topic: tmpl("bench/%i"),
								QoS:   1,
								Size:  1000,
								Every: 500 * time.Millisecond,
								Pos:   at("spec.yaml", 41, 7),
							},
							Pos: at("spec.yaml", 36, 5),
						},
					},
					Warmup:   5 * time.Second,
					Ramp:     10 * time.Second,
					Duration: 30 * time.Second,
					Drain:    5 * time.Second,
					Seed:     DefaultSeed,
					Thresholds: []ThresholdSource{
						{Expr: "p99 < 10ms and dup_rate < 0.001", Pos: at("spec.yaml", 55, 5)},
						{Expr: "loss_rate == 0", Pos: at("spec.yaml", 56, 5)},
						{Expr: "connect.failed == 0", Pos: at("spec.yaml", 57, 5)},
						{Expr: "groups.sub.recv_rate >= 190", Pos: at("spec.yaml", 58, 5)},
					},
				})
			},
		},
		{
			name: "cluster URLs are written out with default ports and paths",
			file: "cluster.yaml",
			check: func(t *testing.T, p *Plan) {
				want := []string{
					"mqtt://n1:1883",
					"mqtt://n2:1884",
					"mqtts://n3:8883",
					"mqtts://n4:8883",
					"mqtts://[::1]:8883",
					"ws://n5:80/mqtt",
					"wss://n6:8443/custom?x=1",
					"mqtt://n7:1883",
				}
				expect(t, "urls", p.Broker.URLs, want)
				expect(t, "protocol", p.Broker.Protocol, 4)
				expect(t, "groups[0].protocol (the broker's)", p.Groups[0].Protocol, 4)
				expect(t, "connect_timeout", p.Broker.ConnectTimeout, 2500*time.Millisecond)
				expect(t, "duration", p.Duration, 90*time.Second)
				expect(t, "embedded", p.Broker.IsEmbedded(), false)
			},
		},
		{
			name: "TLS paths are relative to the plan file",
			file: "tls.yaml",
			check: func(t *testing.T, p *Plan) {
				expect(t, "tls", p.Broker.TLS, &TLS{
					CA:                 "../testdata/plans/valid/certs/ca.pem",
					Cert:               "/etc/mqplan/client.pem",
					Key:                "../testdata/plans/shared/client.key",
					ServerName:         "broker.local",
					InsecureSkipVerify: true,
				})
				expect(t, "urls", p.Broker.URLs, []string{"mqtts://broker.example:8883"})
				expect(t, "source_addresses", p.Broker.SourceAddresses, []string{"127.0.0.2", "::1", "10.0.0.1"})
			},
		},
		{
			name: "environment variables, defaults and $$",
			file: "env.yaml",
			check: func(t *testing.T, p *Plan) {
				expect(t, "name", p.Name, "env-plan")
				expect(t, "url", p.Broker.URLs, []string{"mqtt://broker.example:1883"})
				sub, pub := p.Groups[0], p.Groups[1]
				expect(t, "sub.count", sub.Count, 25)
				expect(t, "sub.username", sub.Username.String(), "bench")
				expect(t, "sub.password", sub.Password.Reveal(), "s3cret")
				expect(t, "sub.subscribe", sub.Subscribe[0].Topic.String(), "$share/g1/prices/+")
				expect(t, "pub.client_id", pub.ClientID.String(), "pub$-%i")
				expect(t, "pub.username (set but empty uses the default)", pub.Username.String(), "fallback")
				expect(t, "pub.topic (nested default)", pub.Publish.Topic.String(), "prices/us")
				expect(t, "pub.qos", pub.Publish.QoS, byte(1))
				expect(t, "pub.rate", pub.Publish.Rate, 100.0)
				expect(t, "duration", p.Duration, 10*time.Second)
			},
		},
		{
			name: "subscribe as a filter, a mapping and a list",
			file: "subscribe_forms.yaml",
			check: func(t *testing.T, p *Plan) {
				f := "subscribe_forms.yaml"
				expect(t, "plain", p.Groups[0].Subscribe, []Subscription{{Topic: tmpl("sensors/+/temp"), Pos: at(f, 4, 16)}})
				expect(t, "mapping", p.Groups[1].Subscribe, []Subscription{{Topic: tmpl("sensors/#"), QoS: 2, Pos: at(f, 6, 16)}})
				expect(t, "list", p.Groups[2].Subscribe, []Subscription{
					{Topic: tmpl("$share/workers/jobs/#"), Pos: at(f, 11, 9)},
					{Topic: tmpl("replies/%c"), QoS: 1, Pos: at(f, 12, 9)},
					{Topic: tmpl("users/%u/+"), Pos: at(f, 14, 9)},
					{Topic: tmpl("100%%/done"), Pos: at(f, 15, 9)},
				})
				for _, g := range p.Groups {
					if g.Publish != nil {
						t.Errorf("group %s: publish should be nil", g.Name)
					}
				}
			},
		},
		{
			name: "MQTT 5 subscription options",
			file: "subscription_options.yaml",
			check: func(t *testing.T, p *Plan) {
				f := "subscription_options.yaml"
				expect(t, "chat", p.Groups[0].Subscribe, []Subscription{
					{Topic: tmpl("room/#"), QoS: 1, NoLocal: true, RetainAsPublished: true, RetainHandling: 2, Pos: at(f, 6, 9)},
					{Topic: tmpl("status/+"), RetainHandling: 1, Pos: at(f, 11, 9)},
				})
			},
		},
		{
			name: "rates, sizes and durations in every form",
			file: "rates_sizes.yaml",
			check: func(t *testing.T, p *Plan) {
				g := p.Groups
				expect(t, "connect_every 2ms", g[0].ConnectRate, 500.0)
				expect(t, "rate 60/min", g[0].Publish.Rate, 1.0)
				expect(t, "size 1KiB", g[0].Publish.Size, 1024)
				expect(t, "connect_rate 0", g[1].ConnectRate, 0.0)
				expect(t, "rate 3600/h", g[1].Publish.Rate, 1.0)
				expect(t, "size 1.5MB", g[1].Publish.Size, 1_500_000)
				expect(t, "connect_rate 2/ms", g[2].ConnectRate, 2000.0)
				expect(t, "rate 0.5", g[2].Publish.Rate, 0.5)
				expect(t, "size 512 b", g[2].Publish.Size, 512)
				expect(t, "connect_rate 250.5", g[3].ConnectRate, 250.5)
				expect(t, "every 250us", g[3].Publish.Every, 250*time.Microsecond)
				expect(t, "size 2 MiB", g[3].Publish.Size, 2<<20)
				expect(t, "every 1m30s", g[4].Publish.Every, 90*time.Second)
				expect(t, "size 1_024", g[4].Publish.Size, 1024)
				expect(t, "warmup 0", p.Warmup, time.Duration(0))
				expect(t, "ramp", p.Ramp, 1500*time.Millisecond)
				expect(t, "duration", p.Duration, 2*time.Hour)
				expect(t, "drain 0s", p.Drain, time.Duration(0))
			},
		},
		{
			name: "duration may be left out when every publisher has a count",
			file: "counts_only.yaml",
			check: func(t *testing.T, p *Plan) {
				expect(t, "duration", p.Duration, time.Duration(0))
				expect(t, "pub1.count", p.Groups[1].Publish.Count, 100)
				expect(t, "pub2.count", p.Groups[2].Publish.Count, 1000)
			},
		},
		{
			name: "anchors, aliases and merge keys",
			file: "anchors.yaml",
			check: func(t *testing.T, p *Plan) {
				a, b, c := p.Groups[0], p.Groups[1], p.Groups[2]
				expect(t, "a.count (merged)", a.Count, 20)
				expect(t, "a.keepalive (merged)", a.Keepalive, 30*time.Second)
				expect(t, "a.connect_rate (merged)", a.ConnectRate, 100.0)
				expect(t, "a.publish", *a.Publish, Publish{Topic: tmpl("a/%i"), QoS: 1, Size: 64, Every: 100 * time.Millisecond, Pos: at("anchors.yaml", 14, 7)})
				expect(t, "b.count (own key wins)", b.Count, 5)
				expect(t, "b.publish.qos (own key wins)", b.Publish.QoS, byte(2))
				expect(t, "b.publish.size (merged)", b.Publish.Size, 64)
				expect(t, "c.subscribe", len(c.Subscribe), 2)
				expect(t, "groups", len(p.Groups), 3)
			},
		},
		{
			name: "groups that only connect",
			file: "connections_only.yaml",
			check: func(t *testing.T, p *Plan) {
				g := p.Groups[0]
				expect(t, "urls (tcp is mqtt)", p.Broker.URLs, []string{"mqtt://127.0.0.1:1883"})
				expect(t, "count", g.Count, 500_000)
				expect(t, "start", g.Start, 0)
				expect(t, "connect_rate", g.ConnectRate, 10000.0)
				expect(t, "keepalive 0s (off)", g.Keepalive, time.Duration(0))
				expect(t, "publish", g.Publish == nil && g.Subscribe == nil, true)
			},
		},
		{
			name: "sessions, reconnects, wills and protocols",
			file: "session.yaml",
			check: func(t *testing.T, p *Plan) {
				d, l := p.Groups[0], p.Groups[1]
				expect(t, "broker.protocol", p.Broker.Protocol, 3)
				expect(t, "durable.protocol (override)", d.Protocol, 5)
				expect(t, "legacy.protocol (the broker's)", l.Protocol, 3)
				expect(t, "durable.clean_start", d.CleanStart, false)
				expect(t, "durable.session_expiry", d.SessionExpiry, time.Hour)
				expect(t, "durable.keepalive", d.Keepalive, 65535*time.Second)
				expect(t, "durable.reconnect (defaults)", d.Reconnect, &Reconnect{After: time.Second})
				expect(t, "durable.will", d.Will, &Will{Topic: tmpl("wills/%c")})
				expect(t, "durable.subscribe", d.Subscribe[0].Topic.String(), "jobs/%c")
				expect(t, "legacy.reconnect", l.Reconnect, &Reconnect{After: 250 * time.Millisecond, Max: 3})
				expect(t, "legacy.will", l.Will, &Will{Topic: tmpl("gone"), Payload: "bye", QoS: 2, Retain: true})
				expect(t, "legacy.publish.retain", l.Publish.Retain, true)
			},
		},
		{
			// The threshold compiler adds offsets into the expression to
			// these positions, so they must point at its first character.
			name: "threshold positions point at the expression text",
			file: "thresholds.yaml",
			check: func(t *testing.T, p *Plan) {
				f := "thresholds.yaml"
				expect(t, "thresholds", p.Thresholds, []ThresholdSource{
					{Expr: "p99 < 10ms", Pos: at(f, 6, 5)},
					{Expr: "loss_rate == 0", Pos: at(f, 7, 6)},
					{Expr: "dup_rate < 0.001", Pos: at(f, 8, 6)},
					{Expr: "connect.failed == 0", Pos: at(f, 9, 7)},
					{Expr: "groups.pub.sent > 0\n", Pos: at(f, 11, 5)},
				})
			},
		},
		{
			// Size literals read as payload sizes read them, and whole-run
			// metrics compile at the top level.
			name: "thresholds with sizes",
			file: "thresholds_sizes.yaml",
			check: func(t *testing.T, p *Plan) {
				expect(t, "publish.size", p.Groups[0].Publish.Size, 1024)
				var exprs []string
				for _, th := range p.Thresholds {
					exprs = append(exprs, th.Expr)
				}
				expect(t, "thresholds", exprs, []string{"broker.rss.max < 2GiB", "self.rss.max < 200MiB and broker.memory.max < 1GiB",
					"received_bytes / received <= 1KiB", "broker.rss.max < 2147483648", "broker.cpu.max < 80 and broker.dropped == 0"})
				ths, errs := CompileThresholds(p)
				if len(errs) > 0 || len(ths) != 5 {
					t.Fatalf("CompileThresholds: %d compiled, errors %v", len(ths), errs)
				}
			},
		},
		{
			name: "--set overrides, creating what is missing",
			file: "minimal.yaml",
			sets: []string{
				"duration=20s",
				"duration=1m", // the later one wins
				"broker.url=mqtt://127.0.0.1:1884",
				"groups.pub.count=50",
				"groups[0].publish.qos=1",
				"groups.pub.subscribe[0].topic=a/#",
				"groups.pub.subscribe[1]={topic: b/+, qos: 2}",
				"thresholds[0]=p99 < 10ms and loss_rate == 0",
				"groups.pub.publish.size=' 1KiB '",
				"groups.pub.will={topic: w, payload: bye}",
				"description=",
			},
			check: func(t *testing.T, p *Plan) {
				g := p.Groups[0]
				expect(t, "duration", p.Duration, time.Minute)
				expect(t, "urls", p.Broker.URLs, []string{"mqtt://127.0.0.1:1884"})
				expect(t, "broker.pos", p.Broker.Pos, Pos{File: "--set"})
				expect(t, "count", g.Count, 50)
				expect(t, "qos", g.Publish.QoS, byte(1))
				expect(t, "size", g.Publish.Size, 1024)
				expect(t, "subscribe", g.Subscribe, []Subscription{
					{Topic: tmpl("a/#"), Pos: Pos{File: "--set"}},
					{Topic: tmpl("b/+"), QoS: 2, Pos: Pos{File: "--set"}},
				})
				expect(t, "thresholds", p.Thresholds, []ThresholdSource{{Expr: "p99 < 10ms and loss_rate == 0", Pos: Pos{File: "--set"}}})
				expect(t, "will", g.Will, &Will{Topic: tmpl("w"), Payload: "bye"})
				expect(t, "description", p.Description, "")
			},
		},
		{
			name: "--set replaces a single subscribe filter when indexed at 0",
			file: "subscribe_forms.yaml",
			sets: []string{"groups.plain.subscribe[0]=x/#", "groups[1].subscribe[1]=y"},
			check: func(t *testing.T, p *Plan) {
				expect(t, "plain", p.Groups[0].Subscribe[0].Topic.String(), "x/#")
				expect(t, "mapping", len(p.Groups[1].Subscribe), 2)
				expect(t, "mapping[1]", p.Groups[1].Subscribe[1].Topic.String(), "y")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := loadFixture(t, filepath.Join(validDir, tc.file), tc.sets...)
			tc.check(t, p)
		})
	}
}

func expect[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: got %+v, want %+v", what, got, want)
	}
}

// TestLoadErrors loads bad plans and compares every message, with its
// position, against testdata/golden/load/<case>.txt.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		file string // under testdata/plans/invalid, or a path from this package
		sets []string
	}{
		{name: "missing_file", file: "nope.yaml"},
		{name: "empty", file: "empty.yaml"},
		{name: "comments_only", file: "comments_only.yaml"},
		{name: "syntax_error", file: "syntax_error.yaml"},
		{name: "syntax_indent", file: "syntax_indent.yaml"},
		{name: "syntax_unclosed", file: "syntax_unclosed.yaml"},
		{name: "syntax_tab", file: "syntax_tab.yaml"},
		{name: "syntax_unknown_alias", file: "syntax_unknown_alias.yaml"},
		{name: "not_mapping", file: "not_mapping.yaml"},
		{name: "multi_document", file: "multi_document.yaml"},
		{name: "wrong_types", file: "wrong_types.yaml"},
		{name: "unknown_keys", file: "unknown_keys.yaml"},
		{name: "duplicate_keys", file: "duplicate_keys.yaml"},
		{name: "bad_templates", file: "bad_templates.yaml"},
		{name: "bad_filters", file: "bad_filters.yaml"},
		{name: "bad_topics", file: "bad_topics.yaml"},
		{name: "qos3", file: "qos3.yaml"},
		{name: "bad_sizes", file: "bad_sizes.yaml"},
		{name: "every_and_rate", file: "every_and_rate.yaml"},
		{name: "neither_every_nor_rate", file: "neither_every_nor_rate.yaml"},
		{name: "unset_var", file: "unset_var.yaml"},
		{name: "bad_env_syntax", file: "bad_env_syntax.yaml"},
		{name: "duplicate_group_names", file: "duplicate_group_names.yaml"},
		{name: "duration_missing", file: "duration_missing.yaml"},
		{name: "duration_missing_no_publishers", file: "duration_missing_no_publishers.yaml"},
		{name: "bad_durations", file: "bad_durations.yaml"},
		{name: "bad_churn", file: "bad_churn.yaml"},
		{name: "bad_rates", file: "bad_rates.yaml"},
		{name: "bad_urls", file: "bad_urls.yaml"},
		{name: "url_and_urls", file: "url_and_urls.yaml"},
		{name: "embedded_mixed", file: "embedded_mixed.yaml"},
		{name: "bad_broker", file: "bad_broker.yaml"},
		{name: "bad_groups", file: "bad_groups.yaml"},
		{name: "bad_payload", file: "bad_payload.yaml"},
		{name: "bad_names", file: "bad_names.yaml"},
		{name: "groups_empty", file: "groups_empty.yaml"},
		{name: "groups_not_list", file: "groups_not_list.yaml"},
		{name: "alias_cycle", file: "alias_cycle.yaml"},
		{name: "alias_bomb", file: "alias_bomb.yaml"},
		{name: "bad_merge", file: "bad_merge.yaml"},
		{name: "bad_thresholds", file: "bad_thresholds.yaml"},
		{name: "threshold_alternatives", file: "threshold_alternatives.yaml"},
		{name: "threshold_sizes", file: "threshold_sizes.yaml"},
		{name: "thresholds_not_list", file: "thresholds_not_list.yaml"},
		{name: "bad_subscription_options", file: "bad_subscription_options.yaml"},
		{name: "bad_requests", file: "bad_requests.yaml"},
		{name: "client_id_collisions", file: "client_id_collisions.yaml"},
		{name: "control_chars", file: "control_chars.yaml"},
		{name: "timeline_overflow", file: "timeline_overflow.yaml"},
		{name: "timeline_counts", file: "timeline_counts.yaml"},
		{name: "too_much_work", file: "too_much_work.yaml"},
		{name: "bad_stages", file: "bad_stages.yaml"},
		{name: "stages_zero", file: "stages_zero.yaml"},
		{name: "bad_burst", file: "bad_burst.yaml"},
		{name: "bad_arrival", file: "bad_arrival.yaml"},
		{name: "bad_sharding", file: "bad_sharding.yaml"},
		{name: "bad_disturbance", file: "bad_disturbance.yaml"},
		{name: "sharding_not_mapping", file: filepath.Join(validDir, "minimal.yaml"), sets: []string{"sharding=stripe"}},
		{name: "poisson_too_much_work", file: filepath.Join(validDir, "poisson.yaml"), sets: []string{"groups.devices.count=50000"}},
		{name: "stages_burst", file: "stages_burst.yaml"},
		{name: "stage_thresholds", file: "stage_thresholds.yaml"},
		{name: "group_stages", file: "group_stages.yaml"},
		{name: "stages_too_many", file: filepath.Join(validDir, "stages.yaml"), sets: []string{"stages=" + tooManyStages()}},
		{
			name: "bad_set_paths",
			file: filepath.Join(validDir, "minimal.yaml"),
			sets: []string{
				"groups.nope.count=1",
				"groups[5].count=1",
				"duration.x=1",
				"nokey",
				"=5",
				"groups..count=1",
				"groups[x].count=1",
				"groups[0.count=1",
				"groups.pub.subscribe[3]=a",
				"groups.pub.publish[0]=x",
				"broker.urls[2]=mqtt://x",
			},
		},
		{
			name: "bad_set_values",
			file: filepath.Join(validDir, "minimal.yaml"),
			sets: []string{
				"groups[0].publish.qos=3",
				"duration=abc",
				"groups.pub.count=[1",
				"broker.url=ftp://x",
				"groups.pub.publish.size=8",
				"groups.pub.subscribe[0]={topic: a/#/b, qos: 1}",
				"groups.pub.cont=5",
				"warmup=${MQPLAN_TEST_UNSET_WARMUP}",
				"thresholds=p99 < 10ms",
				"groups.pub.publish.rate=10/s",
			},
		},
		{
			name: "bad_set_groups",
			file: filepath.Join(invalidDir, "groups_not_list.yaml"),
			sets: []string{"groups.pub.count=2", "groups[0].count=2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.file
			if !strings.Contains(path, "/") {
				path = filepath.Join(invalidDir, path)
			}
			p, err := Load(path, LoadOptions{LookupEnv: lookupTestEnv, Sets: tc.sets})
			if err == nil {
				t.Fatalf("Load(%s) = %+v, want an error", path, p)
			}
			if p != nil {
				t.Errorf("Load returned a plan along with an error")
			}
			var es Errors
			if errors.As(err, &es) {
				checkPositioned(t, es)
			} else if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Load(%s) returned %T, want Errors", path, err)
			}
			golden.Check(t, filepath.Join(goldenDir, tc.name+".txt"), []byte(err.Error()+"\n"))
		})
	}
}

// checkPositioned checks the promises of Errors: at least one problem,
// each in the file with a line and column, or from --set; sorted.
func checkPositioned(t *testing.T, es Errors) {
	t.Helper()
	if len(es) == 0 {
		t.Fatalf("empty Errors returned as an error")
	}
	for i, e := range es {
		switch {
		case e.Pos.File == setPosFile:
			if e.Pos.Line != 0 {
				t.Errorf("--set error with a line: %v", e)
			}
		case e.Pos.Line < 1 || e.Pos.Col < 1:
			t.Errorf("error without a position: %q", e)
		}
		if e.Msg == "" {
			t.Errorf("error without a message: %q", e)
		}
		if i > 0 && (es[i-1].Pos.Line > e.Pos.Line || es[i-1].Pos.Line == e.Pos.Line && es[i-1].Pos.Col > e.Pos.Col) {
			t.Errorf("errors not sorted: %q before %q", es[i-1], e)
		}
	}
}

// TestLoadReadError checks that a file that cannot be read is a plain
// error naming it, not a plan problem.
func TestLoadReadError(t *testing.T) {
	for _, path := range []string{filepath.Join(invalidDir, "nope.yaml"), invalidDir} {
		_, err := Load(path, LoadOptions{})
		var es Errors
		if err == nil || errors.As(err, &es) {
			t.Fatalf("Load(%s) = %v, want a read error", path, err)
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("Load(%s): %q does not name the file", path, err)
		}
	}
}

// TestLoadPasswordNeverPrinted checks that the decoded password does not
// leak through the plan's printed forms.
func TestLoadPasswordNeverPrinted(t *testing.T) {
	p := loadFixture(t, filepath.Join(validDir, "spec.yaml"))
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{string(b), p.Groups[0].Password.String()} {
		if strings.Contains(s, "s3cret") {
			t.Errorf("password printed: %s", s)
		}
	}
}

func TestLoadParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		bad  bool
	}{
		{in: "500/s", want: 500},
		{in: "500 / s", want: 500},
		{in: "60/min", want: 1},
		{in: "60/m", want: 1},
		{in: "3600/h", want: 1},
		{in: "2/ms", want: 2000},
		{in: "1/us", want: 1e6},
		{in: "100", want: 100},
		{in: "0.5/s", want: 0.5},
		{in: ".5", want: 0.5},
		{in: "1e3/s", want: 1000},
		{in: "0", want: 0},
		{in: "-1/s", want: -1},
		{in: "fast", bad: true},
		{in: "5/day", bad: true},
		{in: "/s", bad: true},
		{in: "", bad: true},
		{in: "NaN", bad: true},
		{in: "Inf/s", bad: true},
		{in: "0x10/s", bad: true},
		{in: "1e999/s", bad: true},
		{in: "5/S", bad: true}, // units are case-sensitive, as in Go durations
	}
	for _, tc := range tests {
		got, err := ParseRate(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseRate(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || math.Abs(got-tc.want) > 1e-9*math.Abs(tc.want) {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestLoadParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "1024", want: 1024},
		{in: "512B", want: 512},
		{in: "512 b", want: 512},
		{in: "1KB", want: 1000},
		{in: "1kb", want: 1000},
		{in: "1KiB", want: 1024},
		{in: "1kib", want: 1024},
		{in: "1.5MB", want: 1_500_000},
		{in: "1.5MiB", want: 3 << 19},
		{in: "2GB", want: 2_000_000_000},
		{in: "1GiB", want: 1 << 30},
		{in: "0.5KiB", want: 512},
		{in: "+16", want: 16},
		{in: "0", want: 0},
		{in: "1_048_576", want: 1 << 20},
		{in: "1_000.5KB", want: 1_000_500},
		{in: "1__0", bad: true},
		{in: "_1", bad: true},
		{in: "1.0001KB", bad: true}, // 1000.1 bytes
		{in: "-1KB", bad: true},
		{in: "big", bad: true},
		{in: "1K", bad: true},
		{in: "1e3", bad: true},
		{in: "1.2.3", bad: true},
		{in: ".", bad: true},
		{in: "", bad: true},
		{in: "99999999999999999GiB", bad: true},
		{in: "9999999999GiB", bad: true},
	}
	for _, tc := range tests {
		got, err := ParseSize(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseSize(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestLoadExpandEnv(t *testing.T) {
	env := map[string]string{"A": "a", "EMPTY": "", "B": "b"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		in, want string
		err      string // a part of the expected error
	}{
		{in: "plain", want: "plain"},
		{in: "${A}", want: "a"},
		{in: "x${A}y${B}z", want: "xaybz"},
		{in: "${NOPE:-d}", want: "d"},
		{in: "${EMPTY:-d}", want: "d"}, // as in the shell, :- covers empty too
		{in: "${EMPTY}", want: ""},
		{in: "${NOPE:-}", want: ""},
		{in: "${NOPE:-${A}}", want: "a"},
		{in: "${NOPE:-${NOPE2:-deep}}", want: "deep"},
		{in: "${A:-${NOPE}}", want: "a"}, // the default is not looked at when unused
		{in: "$$", want: "$"},
		{in: "$${A}", want: "${A}"},
		{in: "$share/g/t", want: "$share/g/t"},
		{in: "cost $5", want: "cost $5"},
		{in: "end$", want: "end$"},
		{in: "${NOPE}", err: "environment variable NOPE is not set"},
		{in: "${NOPE:-${NOPE2}}", err: "NOPE2 is not set"},
		{in: "${A", err: "without its closing }"},
		{in: "${}", err: "not a valid variable reference"},
		{in: "${1A}", err: "not a valid variable reference"},
		{in: "${A-x}", err: "not a valid variable reference"},
		{in: strings.Repeat("${N:-", 20) + strings.Repeat("}", 20), err: "nested more than"},
	}
	for _, tc := range tests {
		got, err := expandEnvVars(tc.in, lookup)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("expand(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
			}
		case err != nil || got != tc.want:
			t.Errorf("expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestLoadSuggestKey(t *testing.T) {
	known := []string{"name", "count", "client_id", "keepalive", "connect_rate", "connect_every", "url", "urls"}
	tests := []struct{ in, want string }{
		{in: "cont", want: "count"},
		{in: "client-id", want: "client_id"},
		{in: "Keepalive", want: "keepalive"},
		{in: "keepalvie", want: "keepalive"},
		{in: "connect_rat", want: "connect_rate"},
		{in: "nmae", want: "name"}, // a swap is one edit
		{in: "uslr", want: ""},
		{in: "uri", want: "url"},
		{in: "colour", want: ""},
		{in: "x", want: ""},
	}
	for _, tc := range tests {
		if got := suggestKey(tc.in, known); got != tc.want {
			t.Errorf("suggestKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLoadDefaultName(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(validDir, "minimal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"-":                  "stdin",
		"plans/x.plan.yaml":  "x.plan",
		"fanout":             "fanout",
		"/abs/dir/soak.yml":  "soak",
		"":                   "plan",
		"plans/.hidden.yaml": ".hidden",
	} {
		p, err := LoadBytes(file, data, LoadOptions{})
		if err != nil {
			t.Fatalf("LoadBytes(%q): %v", file, err)
		}
		if p.Name != want {
			t.Errorf("LoadBytes(%q): name %q, want %q", file, p.Name, want)
		}
	}
}

// TestLoadTooLarge checks that a plan over the size limit is refused with
// one line naming the limit, including inputs that never end: Load must
// stop reading at the limit instead of growing without bound.
func TestLoadTooLarge(t *testing.T) {
	const want = ":1:1: the plan is larger than the limit of 4 MiB (4194304 bytes): is this the right file?"
	big := func(t *testing.T) string {
		p := filepath.Join(t.TempDir(), "big.yaml")
		data := []byte("groups: []\n# " + strings.Repeat("x", maxPlanBytes) + "\n")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	endless := func(t *testing.T) string {
		// A FIFO whose writer never stops, like `yes | mqplan validate /dev/stdin`.
		p := filepath.Join(t.TempDir(), "endless")
		if err := mkfifo(p); err != nil {
			t.Skip("mkfifo:", err)
		}
		stop := make(chan struct{})
		t.Cleanup(func() { close(stop) })
		go func() {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			defer f.Close()
			line := []byte("y\n")
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := f.Write(line); err != nil {
					return // the reader closed: what Load must do
				}
			}
		}()
		return p
	}
	tests := []struct {
		name string
		path func(t *testing.T) string
	}{
		{"a file over the limit", big},
		{"/dev/zero", func(*testing.T) string { return "/dev/zero" }},
		{"a pipe that never ends", endless},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path(t)
			type res struct{ err error }
			got := make(chan res, 1)
			go func() {
				_, err := Load(path, LoadOptions{})
				got <- res{err}
			}()
			select {
			case r := <-got:
				var es Errors
				if !errors.As(r.err, &es) || len(es) != 1 || es.Error() != path+want {
					t.Fatalf("got %v, want %s%s", r.err, path, want)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Load still reading after 30s")
			}
		})
	}
	t.Run("LoadBytes says the same", func(t *testing.T) {
		data := []byte("groups: []\n# " + strings.Repeat("x", maxPlanBytes) + "\n")
		_, err := LoadBytes("big.yaml", data, LoadOptions{})
		if err == nil || err.Error() != "big.yaml"+want {
			t.Fatalf("got %v", err)
		}
	})
}

// endlessReader never ends, like `yes`.
type endlessReader struct{}

func (endlessReader) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = "y\n"[i%2]
	}
	return len(b), nil
}

// TestLoadStdin checks that the path "-" reads LoadOptions.Stdin (a
// command's standard input, which need not be the process's) with the
// same size bound as a file.
func TestLoadStdin(t *testing.T) {
	minimal, err := os.ReadFile(filepath.Join(validDir, "minimal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		stdin io.Reader
		// wantErr is the error, or "" for a plan named "stdin".
		wantErr string
	}{
		{name: "a plan", stdin: bytes.NewReader(minimal)},
		{name: "an empty input is an empty plan", stdin: strings.NewReader(""), wantErr: "-:1:1: "},
		{name: "an endless input stops at the limit", stdin: endlessReader{},
			wantErr: "-:1:1: the plan is larger than the limit of 4 MiB (4194304 bytes): is this the right file?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Load("-", LoadOptions{Stdin: tt.stdin})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Load(-): %v", err)
			case tt.wantErr == "" && p.Name != "stdin":
				t.Errorf("name %q, want stdin", p.Name)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want an error starting %q", err, tt.wantErr)
			}
		})
	}
}

// TestLoadSyntaxErrorPositions checks that yaml.v3 syntax errors, which
// carry only an approximate line, are pinned to the character at fault.
func TestLoadSyntaxErrorPositions(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"mapping value in a value", "a: 1\nb: c: d\n", "x.yaml:2:5: invalid YAML: mapping values are not allowed in this context"},
		{"dedented key", "groups:\n  - name: a\n    count: 1\n   bad: 2\n", "x.yaml:4:4: invalid YAML: did not find expected '-' indicator"},
		{"key after a list", "- a\nb: 1\n", "x.yaml:2:1: invalid YAML: did not find expected '-' indicator"},
		{"unclosed list", "a: [1, 2\nb: 3\n", "x.yaml:1:4: invalid YAML: did not find expected ',' or ']'"},
		{"unclosed mapping after a quote in plain text", "a: don't\nb: {c: 1\n", "x.yaml:2:4: invalid YAML: did not find expected ',' or '}'"},
		{"unclosed quote", "x: 1\ny: \"abc\n\nz: 1\n", "x.yaml:2:4: invalid YAML: found unexpected end of stream"},
		{"unknown alias", "a: 1\nb: [x, *nope]\n", "x.yaml:2:8: invalid YAML: unknown anchor 'nope' referenced"},
		{"control character", "a: \"x\x01\"\n", "x.yaml:1:6: invalid YAML: control characters are not allowed"},
		{"tab indentation", "a: 1\n\tb: 2\n", "x.yaml:2:1: invalid YAML: found a tab character that violates indentation"},
		{"stray character", "a: @x\n", "x.yaml:1:4: invalid YAML: found character that cannot start any token"},
		{"content after the document end", "a: 1\n...\nb\n", "x.yaml:3:1: invalid YAML: did not find expected <document start>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadBytes("x.yaml", []byte(tc.data), LoadOptions{})
			if err == nil || err.Error() != tc.want {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}
