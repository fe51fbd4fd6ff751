package plans

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	yaml "go.yaml.in/yaml/v3"

	"github.com/mqplan/mqplan/internal/golden"
)

// schemaFile is the committed schema that the shipped plans' first line
// points editors at; TestSchemaGolden keeps it equal to Schema().
const schemaFile = "../docs/mqplan-plan.schema.json"

func TestSchemaGolden(t *testing.T) {
	golden.Check(t, schemaFile, Schema())
}

// compileSchema compiles Schema() with a real draft 2020-12 validator.
func compileSchema(t *testing.T) *jsonschema.Schema { return compileSchemaTB(t) }

func compileSchemaTB(t testing.TB) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatalf("the schema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	const url = "mqplan-plan.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("compiling the schema: %v", err)
	}
	return s
}

// errNotJSON marks a plan that YAML cannot turn into one JSON document
// (a syntax error, an alias cycle, a duplicate key): editors report those
// as YAML errors, before any schema.
var errNotJSON = errors.New("not a JSON document")

// yamlToJSON decodes plan text as an editor's YAML server does, into the
// JSON value a schema validates.
func yamlToJSON(data []byte) (any, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotJSON, err)
	}
	v, err := jsonValue(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotJSON, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotJSON, err)
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// jsonValue turns the maps YAML decodes with non-string keys into JSON
// objects, as YAML servers do (a key 1 is the property "1").
func jsonValue(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			y, err := jsonValue(x)
			if err != nil {
				return nil, err
			}
			v[k] = y
		}
		return v, nil
	case map[any]any:
		out := map[string]any{}
		for k, x := range v {
			y, err := jsonValue(x)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(k)] = y
		}
		return out, nil
	case []any:
		for i, x := range v {
			y, err := jsonValue(x)
			if err != nil {
				return nil, err
			}
			v[i] = y
		}
		return v, nil
	}
	return v, nil
}

// validateFile validates a plan file against the schema.
func validatePlan(s *jsonschema.Schema, data []byte) error {
	v, err := yamlToJSON(data)
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// TestSchemaKeysMatchLoader walks the schema's mappings and the key lists
// the loader checks mappings against, and fails when one has a key the
// other lacks: an editor must complete exactly the keys mqplan accepts.
func TestSchemaKeysMatchLoader(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal(Schema(), &root); err != nil {
		t.Fatal(err)
	}
	if got := root["$schema"]; got != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v, want draft 2020-12", got)
	}
	defs, _ := root["$defs"].(map[string]any)
	mappings := map[string]map[string]any{"(top level)": root}
	for name, d := range defs {
		mappings[name], _ = d.(map[string]any)
	}
	// What the loader checks each mapping against (load_decode.go), and
	// whether it skips x- keys there.
	loader := map[string]struct {
		keys       []string
		extensions bool
	}{
		"(top level)":    {planKeys, true},
		"broker":         {brokerKeys, false},
		"tls":            {tlsKeys, false},
		"metrics":        {metricsKeys, false},
		"group":          {groupKeys, false},
		"reconnect":      {reconnectKeys, false},
		"will":           {willKeys, false},
		"subscription":   {subKeys, false},
		"publish":        {publishKeys, false},
		"respond":        {respondKeys, false},
		"stage":          {stageKeys, false},
		"burst":          {burstKeys, false},
		"start_delay":    {startDelayKeys, false},
		"size_range":     {sizeRangeKeys, false},
		"size_choice":    {sizeKeys, false},
		"lifetime_range": {lifeRangeKeys, false},
		"drain_range":    {drainKeys, false},
		"sharding":       {shardingKeys, false},
	}
	for _, name := range slices.Sorted(maps.Keys(mappings)) {
		m := mappings[name]
		want, ok := loader[name]
		if !ok {
			t.Errorf("the schema has a mapping %q that the loader has no key list for", name)
			continue
		}
		props, _ := m["properties"].(map[string]any)
		for k := range props {
			if !slices.Contains(want.keys, k) {
				t.Errorf("%s: the schema has the key %q, the loader does not accept it", name, k)
			}
			if doc, _ := props[k].(map[string]any)["description"].(string); doc == "" {
				t.Errorf("%s: the schema's key %q has no description", name, k)
			}
		}
		for _, k := range want.keys {
			if _, ok := props[k]; !ok {
				t.Errorf("%s: the loader accepts the key %q, the schema lacks it", name, k)
			}
		}
		if m["additionalProperties"] != false {
			t.Errorf("%s: the schema allows unknown keys, the loader refuses them", name)
		}
		pp, _ := m["patternProperties"].(map[string]any)
		_, ext := pp["^x-"]
		if ext != want.extensions {
			t.Errorf("%s: the schema allows x- keys: %v, the loader: %v", name, ext, want.extensions)
		}
	}
	for name := range loader {
		if _, ok := mappings[name]; !ok {
			t.Errorf("the loader has a key list for %q, the schema no mapping", name)
		}
	}
}

// validPlans are every plan file the loader accepts: the shipped ones,
// the valid fixtures and the command tests' valid plans.
func validPlans(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.yaml", validDir + "/*.yaml", "../testdata/cli/*.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	shipped, err := fs.Glob(Shipped, "*.yaml")
	if err != nil || len(shipped) == 0 {
		t.Fatalf("no shipped plans: %v", err)
	}
	var out []string
	for _, f := range files {
		if f == "../testdata/cli/invalid.yaml" {
			continue
		}
		out = append(out, f)
	}
	if len(out) < len(shipped)+10 {
		t.Fatalf("found only %d valid plans: %v", len(out), out)
	}
	return out
}

func TestSchemaAcceptsValidPlans(t *testing.T) {
	s := compileSchema(t)
	for _, f := range validPlans(t) {
		t.Run(f, func(t *testing.T) {
			if _, err := Load(f, LoadOptions{LookupEnv: lookupTestEnv}); err != nil {
				t.Fatalf("the loader refuses it, so it does not belong here: %v", err)
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := validatePlan(s, data); err != nil {
				t.Errorf("the loader accepts it, the schema does not:\n%v", err)
			}
		})
	}
}

func TestShippedPlansNameTheSchema(t *testing.T) {
	shipped, err := fs.Glob(Shipped, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const want = "# yaml-language-server: $schema=../docs/mqplan-plan.schema.json\n"
	for _, f := range shipped {
		data, err := fs.ReadFile(Shipped, f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte(want)) {
			t.Errorf("%s does not start with %q", f, want)
		}
	}
	// The path is relative to the plans: it must lead to the schema.
	if _, err := os.Stat(filepath.Join(".", "../docs/mqplan-plan.schema.json")); err != nil {
		t.Error(err)
	}
}

// TestSchemaInvalidFixtures sorts every invalid fixture by what the schema
// can tell of it, so that a new fixture must be sorted too.
func TestSchemaInvalidFixtures(t *testing.T) {
	// Problems the schema finds: unknown keys, wrong types, values out of
	// range or not in their format, missing keys, keys set together.
	caught := []string{
		"bad_arrival", "bad_sharding", "bad_disturbance", "bad_burst", "bad_stages", "stages_burst", "group_stages",
		"bad_broker", "bad_durations", "bad_filters", "bad_groups", "bad_names", "bad_payload",
		"bad_churn", "bad_rates", "bad_requests", "bad_sizes", "closed_loop", "bad_subscription_options", "bad_thresholds",
		"bad_topics", "bad_urls", "comments_only", "control_chars", "empty",
		"every_and_rate", "groups_empty", "groups_not_list", "neither_every_nor_rate",
		"not_mapping", "qos3", "thresholds_not_list", "unknown_keys", "url_and_urls",
		"wrong_types",
	}
	// Plans that are not one JSON document: YAML itself refuses them.
	notJSON := []string{
		"alias_bomb", "alias_cycle", "bad_merge", "duplicate_keys", "syntax_error",
		"syntax_indent", "syntax_tab", "syntax_unclosed", "syntax_unknown_alias",
	}
	// Problems beyond a schema, each a check the loader makes across
	// fields, files or the environment; the schema accepts these plans.
	beyond := map[string]string{
		"bad_env_syntax":                 "${...} syntax: the schema lets any ${ through",
		"bad_templates":                  "template placeholders (%c, %u, %i) and which a field allows",
		"client_id_collisions":           "client ids colliding across groups",
		"closed_loop_no_duration":        "duration required when a group publishes with rate: max",
		"duplicate_group_names":          "group names unique across the list",
		"duration_missing":               "duration required unless every publishing group has a count",
		"duration_missing_no_publishers": "duration required unless every publishing group has a count",
		"embedded_mixed":                 "embedded mixed with other URLs",
		"multi_document":                 "a second YAML document (a schema sees one)",
		"timeline_counts":                "the timeline's length from counts and intervals",
		"timeline_overflow":              "the timeline's length from durations, rates and counts",
		"too_much_work":                  "the whole plan's budgets (clients x filters)",
		"threshold_alternatives":         "the threshold language: an alternative of or that reads nothing of this run",
		"threshold_sizes":                "the threshold language: size literals, their types, whole-run metrics under a scope",
		"unset_var":                      "environment variables that are not set",
		"stages_zero":                    "a rate of 0 in every stage, across the list",
		"stage_thresholds":               "the threshold language: stage names and what a stage measures",
	}
	files, err := filepath.Glob(invalidDir + "/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid fixtures: %v", err)
	}
	s := compileSchema(t)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := LoadBytes(f, data, LoadOptions{LookupEnv: lookupTestEnv}); err == nil {
				t.Fatal("the loader accepts it: it is not an invalid fixture")
			}
			err = validatePlan(s, data)
			switch {
			case slices.Contains(caught, name):
				if err == nil || errors.Is(err, errNotJSON) {
					t.Errorf("the schema should refuse it, got %v", err)
				}
			case slices.Contains(notJSON, name):
				if !errors.Is(err, errNotJSON) {
					t.Errorf("YAML should refuse it, got %v", err)
				}
			case beyond[name] != "":
				if err != nil {
					t.Errorf("listed as beyond the schema (%s), but the schema refuses it: move it to caught\n%v", beyond[name], err)
				}
			default:
				t.Errorf("not sorted: say whether the schema can tell it is invalid (error: %v)", err)
			}
		})
	}
}

// TestSchemaFieldForms checks each kind of field against the schema and
// the loader together: forms both accept, and mistakes both refuse.
func TestSchemaFieldForms(t *testing.T) {
	s := compileSchema(t)
	const pub = "groups:\n  - name: p\n    publish: {topic: t, every: 1s}\nduration: 10s\n"
	tests := []struct {
		name string
		plan string
		ok   bool
	}{
		{"minimal", pub, true},
		{"x- key at the top", "x-base: {qos: 1}\n" + pub, true},
		{"x- key in a group", "groups:\n  - name: p\n    x-note: 1\n    publish: {topic: t, every: 1s}\nduration: 10s\n", false},
		{"unknown top key", "nmae: a\n" + pub, false},
		{"int as text", "groups:\n  - name: p\n    count: \"1_000\"\n    publish: {topic: t, every: 1s}\nduration: 10s\n", true},
		{"int from env", "groups:\n  - name: p\n    count: ${SUBS}\n    publish: {topic: t, every: 1s}\nduration: 10s\n", true},
		{"int not a number", "groups:\n  - name: p\n    count: many\n    publish: {topic: t, every: 1s}\nduration: 10s\n", false},
		{"int below range", "groups:\n  - name: p\n    count: 0\n    publish: {topic: t, every: 1s}\nduration: 10s\n", false},
		{"int above range", "groups:\n  - name: p\n    count: 500001\n    publish: {topic: t, every: 1s}\nduration: 10s\n", false},
		{"qos as text", "groups:\n  - name: p\n    publish: {topic: t, every: 1s, qos: \"2\"}\nduration: 10s\n", true},
		{"qos 3", "groups:\n  - name: p\n    publish: {topic: t, every: 1s, qos: 3}\nduration: 10s\n", false},
		{"qos from env", "groups:\n  - name: p\n    publish: {topic: t, every: 1s, qos: \"${QOS}\"}\nduration: 10s\n", true},
		{"sharding stripe", pub + "sharding: {strategy: stripe}\n", true},
		{"sharding auto, spaced", pub + "sharding: {strategy: \" auto \"}\n", true},
		{"sharding null", pub + "sharding:\n", true},
		{"sharding unknown strategy", pub + "sharding: {strategy: random}\n", false},
		{"sharding a string", pub + "sharding: stripe\n", false},
		{"disturbance fail", pub + "disturbance: fail\n", true},
		{"disturbance inconclusive", pub + "disturbance: inconclusive\n", true},
		{"disturbance unknown", pub + "disturbance: ignore\n", false},
		{"protocol 3", "broker: {protocol: 3}\n" + pub, true},
		{"protocol 6", "broker: {protocol: 6}\n" + pub, false},
		{"protocol as text", "broker: {protocol: \"4\"}\n" + pub, true},
		{"retain_handling 2", "groups:\n  - name: s\n    subscribe: {topic: t, retain_handling: 2}\nduration: 10s\n", true},
		{"retain_handling 3", "groups:\n  - name: s\n    subscribe: {topic: t, retain_handling: 3}\nduration: 10s\n", false},
		{"bool true", "groups:\n  - name: p\n    clean_start: false\n    publish: {topic: t, every: 1s, retain: true}\nduration: 10s\n", true},
		{"bool yes", "groups:\n  - name: p\n    clean_start: yes\n    publish: {topic: t, every: 1s}\nduration: 10s\n", false},
		{"bool as number", "groups:\n  - name: p\n    publish: {topic: t, every: 1s, retain: 1}\nduration: 10s\n", false},
		{"duration units", "groups:\n  - name: p\n    publish: {topic: t, every: 1.5ms}\nwarmup: 1m30s\nramp: 0\ndrain: 250us\nduration: 1h\n", true},
		{"duration without unit", "groups:\n  - name: p\n    keepalive: 60\n    publish: {topic: t, every: 1s}\nduration: 10s\n", false},
		{"duration negative", pub + "warmup: -1s\n", false},
		{"duration unknown unit", pub + "drain: 5d\n", false},
		{"rate forms", "groups:\n  - name: p\n    connect_rate: 0\n    publish: {topic: t, rate: 60/min}\n  - name: q\n    connect_rate: 2.5/ms\n    publish: {topic: t, rate: 500}\nduration: 10s\n", true},
		{"rate zero", "groups:\n  - name: p\n    publish: {topic: t, rate: 0}\nduration: 10s\n", false},
		{"rate too high", "groups:\n  - name: p\n    publish: {topic: t, rate: 2000000000}\nduration: 10s\n", false},
		{"rate unknown unit", "groups:\n  - name: p\n    publish: {topic: t, rate: 5/day}\nduration: 10s\n", false},
		{"size forms", "groups:\n  - name: p\n    publish: {topic: t, every: 1s, size: 1.5 KiB}\n  - name: q\n    publish: {topic: t, every: 1s, size: 16}\nduration: 10s\n", true},
		{"size too small", "groups:\n  - name: p\n    publish: {topic: t, every: 1s, size: 15}\nduration: 10s\n", false},
		{"size unknown unit", "groups:\n  - name: p\n    publish: {topic: t, every: 1s, size: 1TB}\nduration: 10s\n", false},
		{"every and rate", "groups:\n  - name: p\n    publish: {topic: t, every: 1s, rate: 5/s}\nduration: 10s\n", false},
		{"neither every nor rate", "groups:\n  - name: p\n    publish: {topic: t}\nduration: 10s\n", false},
		{"connect_rate and connect_every", "groups:\n  - name: p\n    connect_rate: 5/s\n    connect_every: 1s\n    publish: {topic: t, every: 1s}\nduration: 10s\n", false},
		{"url and urls", "broker: {url: embedded, urls: [embedded]}\n" + pub, false},
		{"urls", "broker: {urls: [mqtt://a:1883, mqtts://b]}\n" + pub, true},
		{"url without scheme", "broker: {url: \"broker:1883\"}\n" + pub, false},
		{"null sections", "broker:\n  tls:\n  source_addresses:\ngroups:\n  - name: p\n    reconnect:\n    will:\n    subscribe:\n    publish: {topic: t, every: 1s}\nthresholds:\nduration: 10s\n", true},
		{"will without topic", "groups:\n  - name: p\n    will: {qos: 1}\n    publish: {topic: t, every: 1s}\nduration: 10s\n", false},
		{"group without name", "groups:\n  - publish: {topic: t, every: 1s}\nduration: 10s\n", false},
		{"group name with a dot", "groups:\n  - name: a.b\n    publish: {topic: t, every: 1s}\nduration: 10s\n", false},
		{"numeric group name", "groups:\n  - name: -7\n    publish: {topic: t, every: 1s}\nduration: 10s\n", true},
		{"no groups", "duration: 10s\n", false},
		{"subscribe forms", "groups:\n  - name: a\n    subscribe: t/#\n  - name: b\n    subscribe: {topic: t, qos: 1}\n  - name: c\n    subscribe: [a, {topic: b, qos: 2}]\nduration: 10s\n", true},
		{"subscribe nested list", "groups:\n  - name: a\n    subscribe: [[a, b]]\nduration: 10s\n", false},
		{"threshold not a string", pub + "thresholds:\n  - {p99: 10ms}\n", false},
		// The loader's rules a schema can say too (issue 9's leftovers).
		{"threshold a number", pub + "thresholds:\n  - 5\n", false},
		{"threshold a boolean", pub + "thresholds:\n  - true\n", false},
		{"threshold null", pub + "thresholds:\n  -\n", false},
		{"threshold blank", pub + "thresholds:\n  - \"  \"\n", false},
		{"publish topic null", "groups:\n  - name: p\n    publish: {topic: null, every: 1s}\nduration: 10s\n", false},
		{"publish topic empty", "groups:\n  - name: p\n    publish: {topic: \"\", every: 1s}\nduration: 10s\n", false},
		{"subscription topic null", "groups:\n  - name: s\n    subscribe: {topic: null}\nduration: 10s\n", false},
		{"will topic null", "groups:\n  - name: p\n    will: {topic: null}\n    publish: {topic: t, every: 1s}\nduration: 10s\n", false},
		{"publish topic with +", "groups:\n  - name: p\n    publish: {topic: a/+/b, every: 1s}\nduration: 10s\n", false},
		{"publish topic with #", "groups:\n  - name: p\n    publish: {topic: \"a/#\", every: 1s}\nduration: 10s\n", false},
		{"will topic with #", "groups:\n  - name: p\n    will: {topic: \"w/#\"}\n    publish: {topic: t, every: 1s}\nduration: 10s\n", false},
		{"publish topic a number", "groups:\n  - name: p\n    publish: {topic: 42, every: 1s}\nduration: 10s\n", true},
		{"publish topic with a template", "groups:\n  - name: p\n    publish: {topic: \"t/%c/%i\", every: 1s}\nduration: 10s\n", true},
		{"url scheme http", "broker: {url: \"http://a:1883\"}\n" + pub, false},
		{"url scheme in capitals", "broker: {url: \"MQTT://a:1883\", protocol: 4}\n" + pub, true},
		{"url Embedded", "broker: {url: Embedded}\n" + pub, false},
		{"publish topic blank", "groups:\n  - name: p\n    publish: {topic: \" \", every: 1s}\nduration: 10s\n", true},
		{"url every scheme", "broker: {urls: [\"mqtt://a\", \"tcp://a\", \"mqtts://a\", \"ssl://a\", \"tls://a\", \"ws://a\", \"wss://a\"]}\n" + pub, true},
		{"urls with an unknown scheme", "broker: {urls: [\"mqtt://a\", \"amqp://b\"]}\n" + pub, false},
		{"positive duration 0s", pub + "broker: {connect_timeout: 0s}\n", false},
		{"positive duration 0m0.0s", "groups:\n  - name: p\n    publish: {topic: t, every: 0m0.0s}\nduration: 10s\n", false},
		{"positive duration forms", "broker: {connect_timeout: 0m1s}\ngroups:\n  - name: p\n    connect_every: .5ms\n    publish: {topic: t, every: 0.01s}\nduration: 1h0m\n", true},
		{"client_id null", "groups:\n  - name: p\n    client_id: null\n    publish: {topic: t, every: 1s}\nduration: 10s\n", true},
		{"password from env", "groups:\n  - name: p\n    username: u\n    password: ${MQTT_PASSWORD}\n    publish: {topic: t, every: 1s}\nduration: 10s\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, loadErr := LoadBytes("plan.yaml", []byte(tc.plan), LoadOptions{LookupEnv: lookupTestEnv})
			if (loadErr == nil) != tc.ok {
				t.Fatalf("the loader: ok = %v, want %v (%v): fix the case", loadErr == nil, tc.ok, loadErr)
			}
			err := validatePlan(s, []byte(tc.plan))
			if errors.Is(err, errNotJSON) {
				t.Fatal(err)
			}
			if (err == nil) != tc.ok {
				t.Errorf("the schema: ok = %v, want %v\n%v", err == nil, tc.ok, err)
			}
		})
	}
}

// FuzzSchemaAcceptsWhatLoads checks that the schema is never stricter than
// the loader: a plan the loader accepts must pass the schema, or an editor
// would flag a plan that runs. Plans that YAML cannot turn into one JSON
// document are left out: an editor reports those as YAML errors.
func FuzzSchemaAcceptsWhatLoads(f *testing.F) {
	for _, data := range fixturePlans(f, validDir, invalidDir) {
		f.Add(data)
	}
	s := compileSchemaTB(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := LoadBytes("plan.yaml", data, LoadOptions{LookupEnv: fuzzEnv}); err != nil {
			return
		}
		if err := validatePlan(s, data); err != nil && !errors.Is(err, errNotJSON) {
			t.Errorf("the loader accepts this plan, the schema does not:\n%s\n%v", data, err)
		}
	})
}

// TestSchemaCatchesEachLoaderError is the reverse of
// FuzzSchemaAcceptsWhatLoads on the invalid fixtures: each problem the
// loader reports must be refused by the schema at its place (the value,
// or its mapping for a missing or unknown key), unless it is one of the
// kinds a schema cannot say, each listed with why. A new loader check
// that a schema could express fails here until the schema does.
func TestSchemaCatchesEachLoaderError(t *testing.T) {
	beyond := []struct{ msg, why string }{
		{`\$\{|environment variable`, "${VAR}: the value is only known at load time"},
		{`^template |^uses %u|expands to up to|wildcard .* as the group's first client expands it`, "templates: placeholders, and what they expand to"},
		{`MQTT 5 subscription option|shared subscription|is MQTT 5 request/response`, "options against the group's or the broker's protocol, and the filter"},
		{`longer than drain|is only for requests`, "request/response keys against drain and response_topic, in other mappings"},
		{`gives the client id|is the same for all`, "client ids across clients and groups"},
		{`duplicate group name`, "names unique across the list"},
		{`gives other credentials|invalid port|path or query|#fragment|cannot be mixed`, "the structure of a URL and of the URL list"},
		{`must be at most 65535s|must be at least (16|4) bytes|must be at most 256MiB|must be a size like|must be at most 1000000000/s|must be more than 0, got 0/s`,
			"bounds of values written with units (65535s, 257MiB, 1e10/s, 0/s): a pattern cannot compare magnitudes"},
		{`longer than the limit|more than the limit|reaches .* more than the limit`, "the timeline's and the plan's budgets, summed across fields"},
		{`missing "duration"`, "duration required unless every publishing group has a count"},
		{`inflight is the window of the closed loop|inflight counts QoS 1/2|max with response_topic is not supported yet|not with rate: max: a closed loop`, "inflight against publish.rate and publish.qos, rate: max against response_topic and arrival: value rules across fields, which the catalogue's presence rules (notBoth, oneOf, anyOf) cannot state"},
		{`reads nothing of this run`, "the threshold language"},
		{`^bad number|with the size|which is not a number of bytes|is not a whole number of bytes|is a whole-run figure`, "the threshold language's literals, types and scopes (a schema sees a string)"},
		{`second one starts here`, "a second YAML document"},
		{`each would be away longer|with clean_start: true is not supported yet|in a churning group|set lifetime or churn with it`,
			"churn's rules read other fields together (count with churn and away, clean_start, the qos of a subscription under a group's lifetime)"},
		{`every stage has rate 0`, "the rates of every stage, across the list"},
		{`unknown stage|is not measured per stage`, "the threshold language: stage names and indexes, and what a stage measures"},
		{`every stage list of a plan has the same names|needs its own stages|not with stages \(groups`, "stage lists across the groups and the top level: the same names and durations"},
		{`no group is named`, "a stage's clients name groups: the keys of one mapping against the names in another list"},
		{`unknown placeholder|at offset|not supported yet with response_topic|%h places the header|header: field needs|header: property needs|needs a payload template|but a group publishes with header: property|size does not apply with a payload template|must not be below min`,
			"payload templates: their placeholders, and the header's place against the template, the protocols and the size (across fields and groups)"},
	}
	files, err := filepath.Glob(invalidDir + "/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid fixtures: %v", err)
	}
	s := compileSchema(t)
	used := make([]bool, len(beyond))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var es Errors
		if _, err := LoadBytes(f, data, LoadOptions{LookupEnv: lookupTestEnv}); !errors.As(err, &es) {
			t.Fatalf("%s: the loader gave %v, want Errors", name, err)
		}
		verr := validatePlan(s, data)
		if errors.Is(verr, errNotJSON) {
			continue // YAML refuses it (TestSchemaInvalidFixtures)
		}
		var locs [][]string
		var ve *jsonschema.ValidationError
		if errors.As(verr, &ve) {
			leafLocations(ve, &locs)
		}
		for _, e := range es {
			if schemaRefusesAt(locs, splitPath(e.Path)) {
				continue
			}
			known := false
			for i, b := range beyond {
				if regexp.MustCompile(b.msg).MatchString(e.Msg) {
					known, used[i] = true, true
					break
				}
			}
			if !known {
				t.Errorf("%s: the schema lets %s through: %s\ntighten the schema, or list why a schema cannot say it", name, e.Path, e.Msg)
			}
		}
	}
	for i, b := range beyond {
		if !used[i] {
			t.Errorf("no fixture has a problem beyond the schema for %q (%s): drop it from the list", b.msg, b.why)
		}
	}
}

// leafLocations collects the instance locations of a validation error's
// innermost causes.
func leafLocations(e *jsonschema.ValidationError, out *[][]string) {
	if len(e.Causes) == 0 {
		*out = append(*out, e.InstanceLocation)
	}
	for _, c := range e.Causes {
		leafLocations(c, out)
	}
}

// splitPath splits a loader path (groups[0].publish.topic) into the parts
// of a JSON pointer (groups, 0, publish, topic).
func splitPath(p string) []string { return regexp.MustCompile(`[^.\[\]]+`).FindAllString(p, -1) }

// schemaRefusesAt reports whether one of the schema's error locations is
// the loader's path, within it, or its mapping (a missing or unknown key
// is reported on the mapping).
func schemaRefusesAt(locs [][]string, path []string) bool {
	for _, l := range locs {
		switch {
		case len(l) >= len(path) && slices.Equal(l[:len(path)], path):
			return true
		case len(l) == len(path)-1 && slices.Equal(l, path[:len(l)]):
			return true
		}
	}
	return false
}
