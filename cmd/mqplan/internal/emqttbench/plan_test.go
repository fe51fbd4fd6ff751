package emqttbench

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/internal/golden"
)

// TestPrintPlan pins the plans that command lines compile into
// (testdata/golden/<case>.yaml; -update rewrites them).
func TestPrintPlan(t *testing.T) {
	tests := []struct {
		name string
		args []string
		note string // a note expected before the plan
	}{
		{name: "sub_defaults", args: []string{"sub", "-t", "t"}},
		{name: "sub_everything", args: []string{"sub", "-h", "n1,n2,::1", "-p", "1884", "-V", "4", "-c", "50", "-n", "100",
			"-i", "5", "-t", "bench/%i", "-t", "all/#", "-q", "1", "-k", "60", "-C", "false", "-x", "30",
			"--prefix", "load", "--ifaddr", "127.0.0.2,127.0.0.3", "--duration", "10m"}},
		{name: "pub_limit_thresholds", args: []string{"pub", "-t", "bench/%i/100%", "-c", "3", "-I", "100", "-s", "1024",
			"-q", "2", "-r", "-L", "10", "-u", "user%1", "-P", "hunter2", "--threshold", "p99 < 50ms", "--threshold", "loss_rate == 0"},
			note: "-L 10 is a limit over all 3 clients; a plan's limit is per client, so each sends 4 (12 in all)"},
		{name: "pub_max_inflight", args: []string{"pub", "-t", "bench/%i", "-c", "4", "-I", "0", "-F", "16", "-q", "1", "--duration", "30s"}},
		{name: "pub_max_limit", args: []string{"pub", "-t", "bench/%i", "-c", "4", "-I", "0", "-q", "2", "-L", "1000"}},
		{name: "pub_max_qos0_inflight", args: []string{"pub", "-t", "bench/%i", "-I", "0", "-F", "8"},
			note: "-F 8 counts QoS 1/2 publishes: at QoS 0 it has no effect"},
		{name: "pub_open_inflight", args: []string{"pub", "-t", "bench/%i", "-I", "10", "-F", "8", "-q", "1"},
			note: "-F 8 is the window of the closed loop (-I 0): with -I 10"},
		{name: "conn_tls_ws", args: []string{"conn", "-S", "--ws", "--cacertfile", "/etc/mqplan/ca.pem", "--certfile", "/etc/mqplan/client.pem",
			"--keyfile", "/etc/mqplan/client.key", "-h", "broker.example", "-p", "8084", "-c", "1000", "-R", "500", "--duration", "1h30m"}},
		{name: "pub_message_v5", args: []string{"pub", "-t", "t/%i", "-m", `{"temp":21.5,"ok":true} 100% ${HOME}`}},
		{name: "pub_message_v4", args: []string{"pub", "-t", "t/%i", "-V", "4", "-s", "999", "-m", "hello"}},
		{name: "pub_random_wait", args: []string{"pub", "-t", "bench/%i", "-c", "10", "-I", "100", "--min-random-wait", "50", "--max-random-wait", "1000"}},
		{name: "pub_random_wait_fixed", args: []string{"pub", "-t", "bench/%i", "--min-random-wait=300", "--max-random-wait=100"}},
		{name: "sub_allow_empty", args: []string{"sub", "-t", "$share/g/bench/#", "--threshold", "p99 < 1s", "--allow-empty"}},
		{name: "literal_dollars", args: []string{"sub", "-t", "$SYS/${HOME}/$$", "-u", "${USER}", "-i", "0", "--insecure", "-S"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Parse(Kind(tt.args[0]), append(tt.args[1:], "--print-plan"))
			if err != nil {
				t.Fatal(err)
			}
			p, err := o.Compile("run1")
			if err != nil {
				t.Fatal(err)
			}
			notes := strings.Join(append(p.Notes, p.PrintNotes...), "\n")
			if tt.note != "" && !strings.Contains(notes, tt.note) {
				t.Errorf("notes lack %q:\n%s", tt.note, notes)
			}
			if strings.Contains(p.Text, "hunter2") || strings.Contains(notes, "hunter2") {
				t.Errorf("the password is printed:\n%s\n%s", p.Text, notes)
			}
			golden.Check(t, filepath.Join("testdata", "golden", tt.name+".yaml"), []byte(p.Text))
		})
	}
}

// TestPlanValues checks what the printed plan means once loaded: the
// password arrives through ${MQTT_PASSWORD} without being written, and
// user values are taken literally.
func TestPlanValues(t *testing.T) {
	t.Setenv(PasswordVar, "from-the-environment")
	t.Setenv("HOME", "/home/x")
	o, err := Parse(Pub, []string{"-t", "$SYS/${HOME}/%i/50%", "-u", "${USER}%i", "-P", "p${A}$$w", "-c", "2", "-n", "9", "--prefix", "pre"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := o.Compile("run1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.Text, "p${A}") {
		t.Fatalf("the plan holds the password:\n%s", p.Text)
	}
	c := p.Program.Clients[1]
	want := []string{"p${A}$$w", "${USER}%i", "pre_bench_pub_11", "$SYS/${HOME}/11/50%"}
	got := []string{c.Password.Reveal(), c.Username, c.ID, c.Publish.Topic}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("password, username, client id, topic of client 2:\n got %q\nwant %q", got, want)
	}
}
