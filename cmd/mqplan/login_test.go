package main

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/mosquittotest"
)

// loginPassword is the password of the login tests: it holds what a URL
// must percent-encode (%, a space, :, @ and /), so that the URL form is
// checked to decode it.
const loginPassword = "s3cr%t pw:@/x"

// TestLoginForms runs a plan against brokers that require a password
// (the embedded broker with users, and Mosquitto with a password file),
// giving the login each way a user does: in --broker's URL, with
// --username and --password-file, in the environment, in the plan's
// broker.url. Each passes; a wrong password fails saying so; the
// precedence (a group's own, then the flags, then --broker's URL, then
// the environment, then the plan's URL) holds; and the password shows in
// no output.
func TestLoginForms(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(broker.Options{Users: map[string]string{"alice": loginPassword}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(5 * time.Second)
	runLoginCases(t, b.URL(), "bad user name or password")
}

// TestLoginFormsMosquitto is TestLoginForms against Mosquitto with a
// password file (mosquitto_passwd), where a refused login is "not
// authorized".
func TestLoginFormsMosquitto(t *testing.T) {
	t.Parallel()
	if mosquittotest.Binary() == "" {
		t.Skip("mosquitto is not installed")
	}
	passwd, err := exec.LookPath("mosquitto_passwd")
	if err != nil {
		t.Skip("mosquitto_passwd is not installed (it comes with mosquitto)")
	}
	pwFile := filepath.Join(t.TempDir(), "passwd")
	if out, err := exec.Command(passwd, "-c", "-b", pwFile, "alice", loginPassword).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd: %v\n%s", err, out)
	}
	// Read as root: Mosquitto drops to its own user otherwise, which
	// cannot read the test's directory. The later allow_anonymous wins.
	m := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "user root\nallow_anonymous false\npassword_file " + pwFile})
	runLoginCases(t, m.MQTT, "not authorized")
}

// runLoginCases runs the cases against the broker at brokerURL, which
// says refused when it refuses a login.
func runLoginCases(t *testing.T, brokerURL, refused string) {
	t.Helper()
	u, err := url.Parse(brokerURL)
	if err != nil {
		t.Fatal(err)
	}
	withLogin := func(user, pw string) string {
		v := *u
		v.User = url.UserPassword(user, pw)
		return v.String()
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pwFile := write("pw", loginPassword+"\n")
	crlfFile := write("pw-crlf", loginPassword+"\r\n")
	wrongFile := write("wrong", "wrong\n")
	emptyFile := write("empty", "\n")
	twoLines := write("two", loginPassword+"\nmore\n")
	hugeFile := write("huge", strings.Repeat("x", maxPasswordFile+1))
	const plan = "testdata/cli/pass.yaml"
	good := map[string]string{envUsername: "alice", envPassword: loginPassword}
	tests := []struct {
		name string
		vars map[string]string
		args []string
		code int
		want string
	}{
		{name: "--broker mqtt://user:pass@host", args: []string{"run", "--quiet", "--broker", withLogin("alice", loginPassword), plan}, code: 0, want: "PASS"},
		{name: "--username and --password-file", args: []string{"run", "--quiet", "--broker", brokerURL, "--username", "alice", "--password-file", pwFile, plan}, code: 0, want: "PASS"},
		{name: "--password-file with a CRLF", args: []string{"run", "--quiet", "--broker", brokerURL, "--username", "alice", "--password-file", crlfFile, plan}, code: 0, want: "PASS"},
		{name: "the environment", vars: good, args: []string{"run", "--quiet", "--broker", brokerURL, plan}, code: 0, want: "PASS"},
		{name: "the plan's broker.url", args: []string{"run", "--quiet", "--set", "broker.url=" + withLogin("alice", loginPassword), plan}, code: 0, want: "PASS"},
		{name: "a user in the URL, its password in a file", args: []string{"run", "--quiet", "--broker", strings.Replace(brokerURL, "://", "://alice@", 1), "--password-file", pwFile, plan}, code: 0, want: "PASS"},
		{name: "a wrong password in the URL", args: []string{"run", "--quiet", "--broker", withLogin("alice", "wrong"), plan}, code: 3, want: refused},
		{name: "no login", args: []string{"run", "--quiet", "--broker", brokerURL, plan}, code: 3, want: refused},
		{name: "--password-file before the URL's", args: []string{"run", "--quiet", "--broker", withLogin("alice", "wrong"), "--password-file", pwFile, plan}, code: 0, want: "PASS"},
		{name: "the URL's before the environment's", vars: map[string]string{envUsername: "mallory", envPassword: "wrong"}, args: []string{"run", "--quiet", "--broker", withLogin("alice", loginPassword), plan}, code: 0, want: "PASS"},
		{name: "the environment before the plan's URL", vars: good, args: []string{"run", "--quiet", "--set", "broker.url=" + withLogin("alice", "wrong"), plan}, code: 0, want: "PASS"},
		{name: "a group's own password first", args: []string{"run", "--quiet", "--broker", brokerURL, "--username", "alice", "--password-file", pwFile, "--set", "groups.pub.password=wrong", plan}, code: 3, want: refused},
		{name: "a wrong --password-file", args: []string{"run", "--quiet", "--broker", brokerURL, "--username", "alice", "--password-file", wrongFile, plan}, code: 3, want: refused},
		{name: "find-max reads --password-file", args: []string{"find-max", "--password-file", emptyFile, plan}, code: 2, want: "the file is empty"},
		{name: "an empty --password-file", args: []string{"run", "--broker", brokerURL, "--password-file", emptyFile, plan}, code: 2, want: "the file is empty"},
		{name: "a --password-file of two lines", args: []string{"run", "--broker", brokerURL, "--password-file", twoLines, plan}, code: 2, want: "holds more than one line"},
		{name: "a --password-file too large", args: []string{"run", "--broker", brokerURL, "--password-file", hugeFile, plan}, code: 2, want: "larger than 4096 bytes"},
		{name: "a missing --password-file", args: []string{"explain", "--password-file", filepath.Join(dir, "nope"), plan}, code: 2, want: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmdWith(t, cmdOpts{vars: tt.vars}, tt.args...)
			out := r.stdout + r.stderr
			if r.code != tt.code || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, tt.want, r.stdout, r.stderr)
			}
			if strings.Contains(out, loginPassword) || strings.Contains(out, url.QueryEscape(loginPassword)) || strings.Contains(out, "s3cr") {
				t.Errorf("the password shows:\n%s", out)
			}
		})
	}
}
