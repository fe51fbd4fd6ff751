package main

import (
	"path/filepath"
	"testing"
)

// TestWorkersReportEmbeddedBroker: the embedded broker that --workers
// hosts in the coordinating parent is in the merged report as in one
// process (the Broker table, its drops warned about): its counters,
// taken once every worker is gone, are the whole run's PUBLISH packets
// in and out and its clients. No worker can read them: to each it is a
// broker elsewhere.
func TestWorkersReportEmbeddedBroker(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.json")
	p := start(t, "run", "--workers", "2", "--quiet", "--set", "warmup=0s", "--json", path, "testdata/cli/pass.yaml")
	if code, out := p.exit(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	r := savedResult(t, path)
	b := r.Broker
	if b == nil {
		t.Fatal("no embedded broker counters in the merged report")
	}
	var sent, received int64
	for _, ph := range r.Measured.Phases {
		s, _ := ph["sent"].(int)
		rc, _ := ph["received"].(int)
		sent, received = sent+int64(s), received+int64(rc)
	}
	if sent == 0 || b.MessagesReceived != sent || b.MessagesSent != received || b.MessagesDropped != 0 || b.ClientsMaximum != 4 {
		t.Errorf("embedded broker: received %d, sent %d, dropped %d, clients %d; want %d, %d, 0, 4 (the workers sent %d and received %d)",
			b.MessagesReceived, b.MessagesSent, b.MessagesDropped, b.ClientsMaximum, sent, received, sent, received)
	}
}
