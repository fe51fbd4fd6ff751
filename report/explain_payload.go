package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/mqplan/mqplan/plans"
)

// payloadSize describes a group's payload size in explain's group table:
// fixed, drawn (smallest-largest and mean) or a template's longest
// rendering for the group's first client.
func payloadSize(prog *plans.Program, gp plans.GroupProgram) string {
	pub := prog.Clients[gp.First].Publish
	switch {
	case pub == nil:
		return "-"
	case pub.Payload != nil:
		return fmt.Sprintf("template ≤%dB", pub.Size)
	case pub.Sizes != nil:
		lo, hi, mean := pub.Sizes.Bounds()
		return fmt.Sprintf("%d-%dB (mean %.0fB)", lo, hi, mean)
	}
	return fmt.Sprintf("%dB", pub.Size)
}

// planPayloadSize describes a plan's publish payload as the HTML page
// shows it: its fixed size, its drawn sizes, or its template.
func planPayloadSize(p *plans.Publish) string {
	switch {
	case p.Payload != nil:
		return "a payload template (header: " + p.Header + ")"
	case p.Sizes != nil:
		lo, hi, mean := p.Sizes.Bounds()
		return fmt.Sprintf("%d-%d B (mean %.0f B)", lo, hi, mean)
	}
	return fmt.Sprintf("%d B", p.Size)
}

// explainPayloads lists each templated group's template, where its header
// goes, and its first client's first message as rendered, as if sent at
// now (the run stamps real send times): a sample a reader recognises as a
// time, where the Unix epoch would read as a bug.
func explainPayloads(b *strings.Builder, prog *plans.Program, now time.Time) {
	for _, gp := range prog.Groups {
		if !gp.Publishes || gp.Count == 0 {
			continue
		}
		pc := &prog.Clients[gp.First]
		pub := pc.Publish
		if pub == nil || pub.Payload == nil && pub.Sizes == nil {
			continue
		}
		if pub.Sizes != nil {
			fmt.Fprintf(b, "\n%s: payload size drawn per message: %s (seed %d)\n", gp.Name, pub.Sizes, prog.Plan.Seed)
			continue
		}
		where := map[string]string{
			plans.HeaderPrefix:   "16 binary bytes before the template's text",
			plans.HeaderProperty: "the MQTT 5 user property " + plans.HeaderPropertyName,
			plans.HeaderField:    "the template's %h",
		}[pub.Header]
		k := plans.PayloadKey{Seed: prog.Plan.Seed, Pub: uint32(pc.Index), Seq: 1}
		sent := ""
		if !now.IsZero() {
			k.Intended = now.UnixNano()
			sent = " (sent at " + now.UTC().Format("2006-01-02T15:04:05.000Z") + ", a sample time)"
		}
		sample := pub.Payload.AppendRender(nil, plans.TemplateVars{ClientID: pc.ID, Username: pc.Username, N: pc.N}, k)
		fmt.Fprintf(b, "\n%s: payload template (header in %s; seed %d), up to %d bytes:\n  %s\n  first message%s: %s\n",
			gp.Name, where, prog.Plan.Seed, pub.Size, TerminalSafe(pub.Payload.String(), ""), sent, TerminalSafe(string(sample), ""))
	}
}
