package plans

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/mqplan/mqplan/internal/brokerurl"
)

// SchemaDialect is the JSON Schema draft that Schema writes.
const SchemaDialect = "https://json-schema.org/draft/2020-12/schema"

// Schema returns the JSON Schema (draft 2020-12) of plan files, generated
// from the loader's field catalogue, for editors (yaml-language-server
// completes keys and flags mistakes as a plan is typed) and for tools that
// check plans without mqplan. It accepts what the loader accepts field by
// field, ${VAR} references included (any string holding ${ passes where a
// number or a duration is expected: its value is only known at load
// time); it cannot express the loader's checks across fields and values
// (the timeline, templates against topics, duplicate names, MQTT 5 options
// on older protocols), so `mqplan validate` stays the last word.
func Schema() []byte {
	root := sectionSchema(planSectionTop)
	root["$schema"] = SchemaDialect
	root["title"] = "mqplan plan"
	defs := map[string]any{}
	for _, s := range []*planSection{brokerSection, brokerMetricsSection, tlsSection, groupSection, reconnectSection, willSection, subscriptionSection, publishSection, respondSection, stageSection, burstSection, startDelaySection, sizeRangeSection, sizeChoiceSection, lifetimeRangeSection, drainRangeSection, shardingSection} {
		defs[s.name] = sectionSchema(s)
	}
	root["$defs"] = defs
	root["allOf"] = append(asList(root["allOf"]), stagedPublishSchema())
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		// Only maps, slices, strings, numbers and booleans are encoded.
		panic(fmt.Sprintf("plans: encoding the plan schema: %v", err))
	}
	return buf.Bytes()
}

// envRefPattern matches a value holding a ${VAR} reference, which the
// loader expands before reading it: its type is only known then.
const envRefPattern = `\$\{`

// textPattern is an ECMA-262 pattern for a scalar written as text: the
// literal form (anchored, blanks around allowed as the loader trims
// them) or any value with a ${VAR} reference.
func textPattern(literal string) string {
	return `^\s*(?:` + literal + `)\s*$|` + envRefPattern
}

// Patterns of the loader's textual forms (load_scalar.go).
const (
	intPattern      = `[+-]?[0-9]+(?:_[0-9]+)*`
	durationPattern = `\+?(?:0|(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+)`
	ratePattern     = `\+?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?(?:\s*/\s*(?:us|µs|ms|s|sec|m|min|h))?`
	sizePattern     = `\+?(?:[0-9]+(?:_[0-9]+)*)?(?:\.(?:[0-9]+(?:_[0-9]+)*)?)?\s*(?:[bB]|[kKmMgG][iI]?[bB])?`
	// positiveDurationPattern is durationPattern with a digit other than
	// 0 in one of its numbers: 0s, 0m0s and 0.0ms are refused where a
	// duration must be more than 0.
	positiveDurationPattern = `\+?(?:(?:0+(?:\.0*)?|\.0+)` + durUnitPattern + `)*` +
		`(?:[0-9]*[1-9][0-9]*(?:\.[0-9]*)?|[0-9]+\.[0-9]*[1-9][0-9]*|\.[0-9]*[1-9][0-9]*)` + durUnitPattern +
		`(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)` + durUnitPattern + `)*`
	durUnitPattern = `(?:ns|us|µs|μs|ms|s|m|h)`
	boolPattern    = `true|True|TRUE|false|False|FALSE`
	groupPattern   = `[A-Za-z0-9_-]+`
	// noControlPattern refuses what unicode.IsControl calls control
	// characters (C0, DEL and C1), which no template may hold.
	noControlPattern = `^[^\x00-\x1F\x7F-\x9F]*$`
	// topicPattern is a required topic or filter: not empty, no
	// control character.
	topicPattern = `^[^\x00-\x1F\x7F-\x9F]+$`
	// publishTopicPattern is a topic a message is published to (publish,
	// will): a topic name, which holds no wildcard + or #.
	publishTopicPattern = `^[^\x00-\x1F\x7F-\x9F+#]+$`
)

// urlPattern is embedded or a URL of one of internal/brokerurl's schemes,
// matched without regard to case as the loader does (ECMA-262 patterns
// in a schema take no flags, so each letter is a class).
func urlPattern() string {
	var alts []string
	for _, sc := range brokerurl.All() {
		var b strings.Builder
		for _, c := range sc.Name {
			if u := unicode.ToUpper(c); u != c {
				b.WriteString("[" + string(c) + string(u) + "]")
			} else {
				b.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		alts = append(alts, b.String())
	}
	return `embedded|(?:` + strings.Join(alts, "|") + `)://\S+`
}

// publishTopics are the sections whose topic (and response_topic) is a
// topic name that messages are published to, never a filter.
var publishTopics = map[*planSection]bool{publishSection: true, willSection: true}

// anyScalar is what a text field holds: YAML reads 123 or true as a number
// or a boolean, and the loader takes its text all the same.
var anyScalar = []any{"string", "number", "boolean"}

// enumSchema is a small integer enum, also written as text.
func enumSchema(doc string, values ...int) map[string]any {
	var alts []string
	for _, v := range values {
		alts = append(alts, strconv.Itoa(v))
	}
	pattern := `[+]?0*(?:`
	for i, a := range alts {
		if i > 0 {
			pattern += "|"
		}
		pattern += a
	}
	pattern += ")"
	vals := make([]any, len(values))
	for i, v := range values {
		vals[i] = v
	}
	return map[string]any{
		"description": doc,
		"anyOf": []any{
			map[string]any{"enum": vals},
			map[string]any{"type": "string", "pattern": textPattern(pattern)},
		},
	}
}

// nullable adds null to a schema: the loader treats a key with nothing
// under it as absent.
func nullable(s map[string]any) map[string]any {
	return map[string]any{"description": s["description"], "anyOf": []any{map[string]any{"type": "null"}, withoutDoc(s)}}
}

func withoutDoc(s map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range s {
		if k != "description" {
			out[k] = v
		}
	}
	return out
}

func ref(s *planSection) map[string]any {
	return map[string]any{"$ref": "#/$defs/" + s.name}
}

// fieldSchema is the schema of one field's value.
func fieldSchema(f planField) map[string]any {
	switch f.kind {
	case fieldText, fieldSecret:
		t := append([]any{}, anyScalar...)
		if f.name != "name" { // the plan's name must not be empty
			t = append(t, "null")
		}
		s := map[string]any{"description": f.doc, "type": t}
		if f.name == "name" {
			s["pattern"] = `\S`
		}
		return s
	case fieldTemplate:
		if f.required {
			// A topic: neither null nor empty.
			return map[string]any{"description": f.doc, "type": anyScalar, "pattern": topicPattern}
		}
		// null is an empty template: the loader's later checks decide.
		return map[string]any{"description": f.doc, "type": []any{"string", "number", "boolean", "null"}, "pattern": noControlPattern}
	case fieldGroupName:
		return map[string]any{"description": f.doc, "type": []any{"string", "integer", "boolean"}, "pattern": textPattern(groupPattern)}
	case fieldStageName:
		// A number is an index, never a name: no integer, and a string
		// needs one character that is not a digit.
		return map[string]any{"description": f.doc, "type": []any{"string", "boolean"}, "pattern": textPattern(`[A-Za-z0-9_-]*[A-Za-z_-][A-Za-z0-9_-]*`)}
	case fieldArrival:
		return map[string]any{"description": f.doc, "type": "string", "pattern": textPattern(ArrivalUniform + "|" + ArrivalPoisson)}
	case fieldDisturbance:
		return map[string]any{"description": f.doc, "type": "string", "pattern": textPattern(DisturbanceInconclusive + "|" + DisturbanceFail)}
	case fieldBrokerURL:
		return map[string]any{"description": f.doc + " Schemes: " + brokerurl.Names() + ".", "type": "string", "pattern": textPattern(urlPattern())}
	case fieldBool:
		return map[string]any{"description": f.doc, "type": []any{"boolean", "string"}, "pattern": textPattern(boolPattern)}
	case fieldInt:
		return map[string]any{"description": f.doc, "type": []any{"integer", "string"}, "minimum": f.min, "maximum": f.max, "pattern": textPattern(intPattern)}
	case fieldQoS:
		return enumSchema(f.doc, 0, 1, 2)
	case fieldRetainHandling:
		return enumSchema(f.doc, 0, 1, 2)
	case fieldProtocol:
		return enumSchema(f.doc, 3, 4, 5)
	case fieldDuration:
		s := map[string]any{"description": f.doc, "type": "string", "pattern": textPattern(durationPattern)}
		if f.positive {
			s["pattern"] = textPattern(positiveDurationPattern)
			return s
		}
		// A bare 0 is a duration too: YAML reads it as a number.
		return map[string]any{"description": f.doc, "anyOf": []any{map[string]any{"const": 0}, withoutDoc(s)}}
	case fieldRate:
		s := map[string]any{"description": f.doc, "type": []any{"number", "string"}, "maximum": maxPlanRate, "pattern": textPattern(ratePattern)}
		if f.positive {
			s["minimum"] = minPlanRate
		} else {
			s["anyOf"] = []any{map[string]any{"const": 0}, map[string]any{"minimum": minPlanRate}}
		}
		return s
	case fieldPublishRate:
		r := fieldSchema(planField{kind: fieldRate, positive: f.positive})
		delete(r, "description")
		return map[string]any{"description": f.doc, "anyOf": []any{r, map[string]any{"const": RateMax}}}
	case fieldSize:
		return map[string]any{"description": f.doc, "type": []any{"integer", "string"}, "minimum": f.min, "maximum": f.max, "pattern": textPattern(sizePattern)}
	case fieldSection:
		return map[string]any{"description": f.doc, "anyOf": []any{map[string]any{"type": "null"}, ref(f.sec)}}
	case fieldPayload:
		return map[string]any{"description": f.doc, "type": anyScalar}
	case fieldHeader:
		return map[string]any{"description": f.doc, "enum": []any{HeaderPrefix, HeaderProperty, HeaderField}}
	case fieldShardStrategy:
		return map[string]any{"description": f.doc, "type": "string", "pattern": textPattern(ShardingAuto + "|" + ShardingStripe)}
	case fieldSizeDist:
		one := withoutDoc(fieldSchema(planField{kind: fieldSize, min: f.min, max: f.max}))
		return map[string]any{"description": f.doc, "anyOf": []any{one, ref(sizeRangeSection),
			map[string]any{"type": "array", "minItems": 1, "maxItems": maxSizeChoices, "items": ref(sizeChoiceSection)}}}
	case fieldStageClients:
		n := withoutDoc(fieldSchema(planField{kind: fieldInt, min: 0, max: maxGroupCount}))
		return map[string]any{"description": f.doc, "type": "object", "additionalProperties": n}
	case fieldLifetime:
		one := withoutDoc(fieldSchema(planField{kind: fieldDuration, positive: true}))
		return map[string]any{"description": f.doc, "anyOf": []any{one, ref(lifetimeRangeSection)}}
	case fieldDrain:
		one := withoutDoc(fieldSchema(planField{kind: fieldDuration}))
		return map[string]any{"description": f.doc, "anyOf": []any{one, ref(drainRangeSection)}}
	case fieldURLList:
		url := withoutDoc(fieldSchema(planField{kind: fieldBrokerURL}))
		return map[string]any{"description": f.doc, "type": "array", "minItems": 1, "items": url}
	case fieldAddressList:
		return nullable(map[string]any{"description": f.doc, "type": "array", "items": map[string]any{"type": "string"}})
	case fieldGroupList:
		return map[string]any{"description": f.doc, "type": "array", "minItems": 1, "items": ref(f.sec)}
	case fieldSubscribe:
		filter := map[string]any{"type": []any{"string", "number", "boolean"}, "pattern": noControlPattern}
		one := map[string]any{"anyOf": []any{filter, ref(f.sec)}}
		return map[string]any{"description": f.doc, "anyOf": []any{
			map[string]any{"type": "null"}, filter, ref(f.sec),
			map[string]any{"type": "array", "items": one},
		}}
	case fieldExprList:
		// A number or a boolean reads no metric: the loader refuses it.
		expr := map[string]any{"type": "string", "pattern": `\S`}
		return nullable(map[string]any{"description": f.doc, "type": "array", "items": expr})
	}
	panic(fmt.Sprintf("plans: field %s has no schema for its kind %d", f.name, f.kind))
}

// sectionSchema is the schema of one mapping: its keys and nothing else
// (bar x- keys where the loader skips them), with its required keys and
// presence rules.
func sectionSchema(s *planSection) map[string]any {
	props := map[string]any{}
	var required []any
	for _, f := range s.fields {
		props[f.name] = fieldSchema(f)
		if publishTopics[s] && (f.name == "topic" || f.name == "response_topic") {
			props[f.name].(map[string]any)["pattern"] = publishTopicPattern
		}
		if f.required {
			required = append(required, f.name)
		}
	}
	out := map[string]any{
		"description":          s.doc,
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if s.extensions {
		out["patternProperties"] = map[string]any{"^x-": map[string]any{"description": "Ignored by mqplan: a place for YAML anchors that other keys alias."}}
	}
	if len(required) > 0 {
		out["required"] = required
	}
	var all []any
	for _, p := range s.notBoth {
		all = append(all, map[string]any{"not": map[string]any{"required": []any{p[0], p[1]}}})
	}
	if len(s.oneOf) > 0 {
		var alts []any
		for _, k := range s.oneOf {
			alts = append(alts, map[string]any{"required": []any{k}})
		}
		all = append(all, map[string]any{"oneOf": alts})
	}
	if len(s.anyOf) > 0 {
		var alts []any
		for _, k := range s.anyOf {
			alts = append(alts, map[string]any{"required": []any{k}})
		}
		all = append(all, map[string]any{"anyOf": alts})
	}
	if len(all) > 0 {
		out["allOf"] = all
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func required(key string) map[string]any { return map[string]any{"required": []any{key}} }

// stagedPublishSchema says across sections what publishSection alone
// cannot: a publishing group gives every or rate exactly when the plan has
// no stages (which give the rate instead); its own publish.stages stand
// for either.
func stagedPublishSchema() map[string]any {
	// The rule is about a publish mapping: a null publish (the key with
	// no value) publishes nothing, and "required" holds vacuously for a
	// null, so every alternative of a oneOf would match it.
	groupsWith := func(publish map[string]any) map[string]any {
		return map[string]any{"properties": map[string]any{"groups": map[string]any{
			"items": map[string]any{"properties": map[string]any{"publish": map[string]any{
				"if": map[string]any{"type": "object"}, "then": publish}}}}}}
	}
	return map[string]any{
		"if": map[string]any{"required": []any{"stages"}},
		"then": map[string]any{"allOf": []any{
			// A group may give its own stages (publish.stages) instead.
			groupsWith(map[string]any{"not": map[string]any{"anyOf": []any{required("every"), required("rate"), required("burst")}}}),
			// Stages replace ramp and duration.
			map[string]any{"not": map[string]any{"anyOf": []any{required("ramp"), required("duration")}}},
		}},
		"else": groupsWith(map[string]any{
			"oneOf": []any{required("every"), required("rate"), required("burst"), required("stages")}}),
	}
}
