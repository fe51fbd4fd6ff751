package plans

import (
	"strings"
	"testing"
)

// TestPayloadHeaderDefault: a payload template's header goes where a
// backend can still parse the payload. On MQTT 5 it defaults to the user
// property (the payload is the template alone); where a subscriber of the
// plan speaks MQTT 3, which receives no properties, and on MQTT 3 itself,
// it stays the binary prefix; a template with %h puts it there; an
// explicit header: is kept.
func TestPayloadHeaderDefault(t *testing.T) {
	tests := []struct {
		name     string
		sub, pub string // extra keys of the sub and pub groups
		publish  string // extra keys of pub's publish
		payload  string
		want     string
	}{
		{name: "MQTT 5 defaults to property", payload: `'{"t":%t}'`, want: HeaderProperty},
		{name: "MQTT 3.1.1 keeps prefix", pub: "protocol: 4", sub: "protocol: 4", payload: `'{"t":%t}'`, want: HeaderPrefix},
		{name: "an MQTT 3 subscriber keeps prefix", sub: "protocol: 4", payload: `'{"t":%t}'`, want: HeaderPrefix},
		{name: "a template with %h puts it in the field", payload: `'{"h":"%h"}'`, want: HeaderField},
		{name: "an explicit prefix is kept on MQTT 5", publish: "header: prefix", payload: `'{"t":%t}'`, want: HeaderPrefix},
		{name: "an explicit property is kept", publish: "header: property", payload: `'{"t":%t}'`, want: HeaderProperty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := "groups:\n" +
				"  - name: sub\n    subscribe: {topic: t/#, qos: 1}\n" + indent(tt.sub) +
				"  - name: pub\n" + indent(tt.pub) +
				"    publish:\n      topic: t/1\n      every: 1s\n      payload: " + tt.payload + "\n" + indent("  "+tt.publish) +
				"duration: 1s\n"
			p, err := LoadBytes("h.yaml", []byte(plan), LoadOptions{})
			if err != nil {
				t.Fatalf("%v\n%s", err, plan)
			}
			if got := p.Groups[1].Publish.Header; got != tt.want {
				t.Errorf("header %q, want %q", got, tt.want)
			}
		})
	}
}

// indent puts a group's extra keys (one line, or none) under it.
func indent(line string) string {
	if strings.TrimSpace(line) == "" {
		return ""
	}
	return "    " + line + "\n"
}
