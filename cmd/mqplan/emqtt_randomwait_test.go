package main

import (
	"testing"

	"github.com/mqplan/mqplan/cmd/mqplan/internal/emqttbench"
)

// TestEmqttRandomWait runs `mqplan pub` with emqtt-bench's
// --min-random-wait/--max-random-wait: each publisher starts after its own
// seeded delay, so it sends fewer messages than a run without the waits
// (those its delay pushes past the end), exactly as many as the compiled
// plan counts (what explain shows).
func TestEmqttRandomWait(t *testing.T) {
	t.Parallel()
	u := startEmqttBroker(t, 1)[0]
	args := []string{"-h", u.Hostname(), "-p", u.Port(), "-t", "rw/%i", "-c", "4", "-I", "100", "--duration", "2s",
		"--min-random-wait", "200", "--max-random-wait", "900"}
	o, err := emqttbench.Parse(emqttbench.Pub, args)
	if err != nil {
		t.Fatal(err)
	}
	p, err := o.Compile("check")
	if err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	for _, ph := range p.Program.Phases {
		want += ph.Messages
	}
	if want >= 80 || want <= 4*11 { // 4 clients × 20 messages in 2 s, less a delay of 0.2 to 0.9 s each
		t.Fatalf("the plan counts %d messages, want between 45 and 79", want)
	}
	r := runCmd(t, append([]string{"pub"}, args...)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := lastTotal(r.stdout, "sent"); int64(got) != want {
		t.Errorf("sent %d, the plan counts %d:\n%s", got, want, r.stdout)
	}
}
