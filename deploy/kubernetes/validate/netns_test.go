package validate

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/wait"
)

// netSubnet is the simulated cluster's network: every test's hosts are
// on their own bridge in their own namespaces, so tests running at the
// same time may all use it; no other test of the repository does.
const netSubnet = "10.213.0."

// stepTimeout bounds each ip, ss or kill the helper runs.
const stepTimeout = 10 * time.Second

// netHost is one simulated machine: a network namespace on the bridge.
type netHost struct {
	ns   string
	addr string
	// sources are two more addresses on its interface, for
	// --source-addresses.
	sources []string
	// peer is the bridge's end of its cable: set down, it is a partition.
	peer string
}

// netHosts is a simulated cluster network in network namespaces: a
// bridge namespace (the switch), a broker's host and n shard hosts,
// each on its own address of netSubnet, and /etc/netns/<ns>/hosts in
// every host naming the others (the headless Service's DNS names, the
// broker's Service name). Everything is torn down when the test ends,
// failed or not; the names are unique per test, so tests in parallel
// and leftovers of a killed run do not clash.
type netHosts struct {
	t      *testing.T
	id     string
	bridge string
	broker netHost
	shards []netHost
	// cutAt is when a test cut a host off.
	cutAt time.Time
	// tools are absolute paths: a pod's environment has no PATH.
	unshare, sh, hostname string
}

// newNetHosts builds the network for n shards; names maps each DNS name
// to the shard that answers it (-1: the broker's host). It needs root
// and iproute2, and skips without them unless CI is set (CI runs as
// root with iproute2 installed, so there it is a failure).
func newNetHosts(t *testing.T, n int, names map[string]int) *netHosts {
	t.Helper()
	need := func(why string) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s, but CI must run the network namespace tests (.ci/run runs them as root)", why)
		}
		t.Skip(why + ": skipping the network namespace test")
	}
	if os.Geteuid() != 0 {
		need("not root (network namespaces need CAP_SYS_ADMIN)")
	}
	h := &netHosts{t: t, id: fmt.Sprintf("mqk%06x", rand.Uint32()&0xffffff)}
	for _, tool := range []struct {
		name string
		into *string
	}{{"ip", nil}, {"ss", nil}, {"unshare", &h.unshare}, {"sh", &h.sh}, {"hostname", &h.hostname}} {
		p, err := exec.LookPath(tool.name)
		if err != nil {
			need(tool.name + " is not installed (apt-get install iproute2 util-linux hostname)")
		}
		if tool.into != nil {
			*tool.into = p
		}
	}
	h.bridge = h.addNS("br")
	h.ip("-n", h.bridge, "link", "add", "br0", "type", "bridge")
	h.ip("-n", h.bridge, "link", "set", "br0", "up")
	h.broker = h.addHost("bk", netSubnet+"1", nil)
	for i := 0; i < n; i++ {
		h.shards = append(h.shards, h.addHost("s"+strconv.Itoa(i), netSubnet+strconv.Itoa(10+i),
			[]string{netSubnet + strconv.Itoa(100+2*i), netSubnet + strconv.Itoa(101+2*i)}))
	}
	var hosts strings.Builder
	hosts.WriteString("127.0.0.1 localhost\n")
	for name, i := range names {
		addr := h.broker.addr
		if i >= 0 {
			addr = h.shards[i].addr
		}
		fmt.Fprintf(&hosts, "%s %s\n", addr, name)
	}
	for _, x := range append([]netHost{h.broker}, h.shards...) {
		dir := filepath.Join("/etc/netns", x.ns)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte(hosts.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// addNS adds the namespace id+suffix, removed (with its /etc/netns
// directory) when the test ends.
func (h *netHosts) addNS(suffix string) string {
	ns := h.id + suffix
	h.ip("netns", "add", ns)
	h.t.Cleanup(func() {
		if out, err := h.run("ip", "netns", "del", ns); err != nil {
			h.t.Errorf("ip netns del %s: %v\n%s", ns, err, out)
		}
		if err := os.RemoveAll(filepath.Join("/etc/netns", ns)); err != nil {
			h.t.Error(err)
		}
	})
	h.ip("-n", ns, "link", "set", "lo", "up")
	return ns
}

// addHost adds a host's namespace, cabled to the bridge, its interface
// eth0 holding addr/24 and the sources.
func (h *netHosts) addHost(suffix, addr string, sources []string) netHost {
	x := netHost{ns: h.addNS(suffix), addr: addr, sources: sources, peer: h.id + suffix + "p"}
	h.ip("link", "add", h.id+suffix, "netns", x.ns, "type", "veth", "peer", "name", x.peer, "netns", h.bridge)
	h.ip("-n", h.bridge, "link", "set", x.peer, "master", "br0", "up")
	h.ip("-n", x.ns, "link", "set", h.id+suffix, "name", "eth0")
	for _, a := range append([]string{addr}, sources...) {
		h.ip("-n", x.ns, "addr", "add", a+"/24", "dev", "eth0")
	}
	h.ip("-n", x.ns, "link", "set", "eth0", "up")
	return x
}

// run runs a tool within stepTimeout.
func (h *netHosts) run(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	return exec.CommandContext(ctx, name, args...).CombinedOutput()
}

// ip runs ip with args, failing the test if it fails.
func (h *netHosts) ip(args ...string) {
	h.t.Helper()
	if out, err := h.run("ip", args...); err != nil {
		h.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// command is argv run in namespace ns with env as its whole environment
// and, when hostname is not "", in a UTS namespace of its own with that
// hostname (a pod's). ip netns exec, unshare and sh each exec the next,
// so the process's id is argv's.
func (h *netHosts) command(ctx context.Context, ns, hostname string, env []string, argv ...string) *exec.Cmd {
	args := []string{"netns", "exec", ns}
	if hostname != "" {
		args = append(args, h.unshare, "--uts", "--", h.sh, "-c", h.hostname+` "$0" && exec "$@"`, hostname)
	}
	cmd := exec.CommandContext(ctx, "ip", append(args, argv...)...)
	cmd.Env = env
	// Should the test itself be killed, its pods and broker die with it
	// (the namespaces' names are unique, so leftovers clash with nothing).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// established is the number of TCP connections established to port on
// the broker's host, by peer address.
func (h *netHosts) established(port int) map[string]int {
	h.t.Helper()
	out, err := h.run("ip", "netns", "exec", h.broker.ns, "ss", "-Htn", "state", "established", "( sport = :"+strconv.Itoa(port)+" )")
	if err != nil {
		h.t.Fatalf("ss in %s: %v\n%s", h.broker.ns, err, out)
	}
	peers := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		addr := f[len(f)-1]
		if i := strings.LastIndexByte(addr, ':'); i > 0 {
			addr = addr[:i]
		}
		peers[addr]++
	}
	return peers
}

// mosquitto is Mosquitto running on the broker's host.
type mosquitto struct {
	url  string
	logs *syncBuffer
}

// startMosquitto starts Mosquitto on the broker's host on port 1883, with
// the interop tests' configuration and every connection logged, and
// waits until it listens. It is stopped when the test ends.
func (h *netHosts) startMosquitto() *mosquitto {
	t := h.t
	t.Helper()
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/mosquitto"); err != nil {
			t.Fatal("mosquitto is not installed (.ci/run installs it)")
		}
	}
	conf, err := os.ReadFile(filepath.Join(repoRoot, "testdata", "mosquitto", "mosquitto.conf"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(conf), "{{LISTENER}}", "user root\nlistener 1883 "+h.broker.addr) +
		"\nlog_type notice\nconnection_messages true\n"
	path := filepath.Join(t.TempDir(), "mosquitto.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := h.command(ctx, h.broker.ns, "", nil, bin, "-c", path)
	m := &mosquitto{url: "mqtt://" + h.broker.addr + ":1883", logs: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = m.logs, m.logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	wait.Until(t, "Mosquitto to listen on "+h.broker.addr+":1883", func() bool {
		select {
		case <-exited:
			t.Fatalf("mosquitto exited:\n%s", m.logs)
		default:
		}
		out, err := h.run("ip", "netns", "exec", h.broker.ns, "ss", "-Hltn", "( sport = :1883 )")
		return err == nil && len(bytes.TrimSpace(out)) > 0
	})
	return m
}

var connectedFrom = regexp.MustCompile(`New client connected from ([0-9.]+):\d+ as (\S+)`)

// mark is where Mosquitto's log is now, for connectionsSince.
func (m *mosquitto) mark() int { return len(m.logs.String()) }

// connectionsSince are the connections Mosquitto logged after mark, by
// source address: the client ids.
func (m *mosquitto) connectionsSince(mark int) map[string][]string {
	by := map[string][]string{}
	for _, c := range connectedFrom.FindAllStringSubmatch(m.logs.String()[mark:], -1) {
		by[c[1]] = append(by[c[1]], c[2])
	}
	return by
}

// syncBuffer is a buffer one process writes and a test reads meanwhile.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
