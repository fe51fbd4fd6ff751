package main

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// canary is the password of TestNoPasswordInOutput: it must appear in no
// output, error or file, whatever route it came by.
const canary = "CANARY-pw-7f3a"

// TestNoPasswordInOutput runs every command, on its success and error
// paths, with a canary password given by every route a password can take
// (URL user information in --broker, --set broker.url and the plan file;
// --username with --password-file; MQPLAN_PASSWORD;
// --set groups.X.password; the plan's password: ${VAR}; emqtt's -P; the
// broker's --auth file), and fails if the canary shows in any standard
// output, standard error or written file.
func TestNoPasswordInOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A broker that wants the canary (and one other user), as a user
	// self-tests passwords.
	auth := write("users", "alice:"+canary+"\n")
	brokerCmd := startCmd(t, "broker", "--listen", "127.0.0.1:0", "--auth", auth)
	urls, brokerRest := listening(t, brokerCmd.stderr, 1)
	brokerURL := urls[0]
	bu, err := url.Parse(brokerURL)
	if err != nil {
		t.Fatal(err)
	}
	brokerTail := make(chan []byte, 1)
	go func() {
		var b bytes.Buffer
		_, _ = b.ReadFrom(brokerRest)
		brokerTail <- b.Bytes()
	}()

	body := "groups:\n" +
		"  - {name: sub, count: 2, username: alice, password: %PW%, subscribe: {topic: \"s/%i\", qos: 1}}\n" +
		"  - {name: pub, count: 2, username: alice, password: %PW%, publish: {topic: \"s/%i\", qos: 1, size: 64B, every: 50ms}}\n" +
		"duration: 1s\ndrain: 2s\nthresholds:\n  - loss_rate == 0\n"
	plan := func(name, broker, pw string) string {
		return write(name, "name: secrets\nbroker:\n  connect_timeout: 2s\n"+broker+strings.ReplaceAll(body, "%PW%", pw))
	}
	noPW := write("nopw.yaml", "name: nopw\nbroker: {connect_timeout: 2s}\ngroups:\n  - {name: pub, count: 1, publish: {topic: t, every: 100ms}}\nduration: 1s\n")
	jsonOut := func(name string) string { return filepath.Join(dir, name) }
	urlPlan := plan("url.yaml", "  url: mqtt://bob:"+canary+"@127.0.0.1:1\n", `""`)
	// The login given once for every group: in the URL of the plan or of
	// --broker, or with --username and --password-file, or in the
	// environment; each run against the broker that wants it, with every
	// writer.
	loginBody := "groups:\n" +
		"  - {name: sub, count: 2, subscribe: {topic: \"s/%i\", qos: 1}}\n" +
		"  - {name: pub, count: 2, publish: {topic: \"s/%i\", qos: 1, size: 64B, every: 50ms}}\n" +
		"duration: 1s\ndrain: 2s\nthresholds:\n  - loss_rate == 0\n"
	loginURL := "mqtt://alice:" + url.PathEscape(canary) + "@" + bu.Host
	urlLoginPlan := write("urllogin.yaml", "name: urllogin\nbroker:\n  connect_timeout: 2s\n  url: "+loginURL+"\n"+loginBody)
	loginPlan := write("login.yaml", "name: login\nbroker:\n  connect_timeout: 2s\n"+loginBody)
	pwFile := write("pwfile", canary+"\n")
	every := func(prefix string) []string {
		var args []string
		for _, f := range []string{"json", "junit", "md", "csv", "html"} {
			args = append(args, "--out", f+"="+jsonOut(prefix+"."+f))
		}
		return append(args, "--partial", jsonOut(prefix+".part.json"))
	}
	loginFiles := func(prefix string) []string {
		var names []string
		for _, f := range []string{"json", "junit", "md", "csv", "html", "part.json"} {
			names = append(names, prefix+"."+f)
		}
		return names
	}
	urlsPlan := plan("urls.yaml", "  urls: [foo://bob:"+canary+"@h, \"mqtt://bob:"+canary+"@h:99999\", \"mqtt://bob:"+canary+"@h/%zz\", mqtt://bob:"+canary+"@h]\n", `""`)
	envPlan := plan("env.yaml", "", `"${PW}"`)
	defPlan := plan("default.yaml", "", `"${NOPE:-`+canary+`}"`)
	badEnvPlan := plan("badenv.yaml", "", `"`+canary+`${"`)
	badRef := plan("badref.yaml", "", `"${`+canary+`}"`)
	pwEnv := map[string]string{"PW": canary}

	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string // a substring of stdout+stderr showing the path was taken
	}{
		// URL user information.
		{name: "run --broker with credentials, unreachable", args: []string{"run", "--broker", "mqtt://bob:" + canary + "@127.0.0.1:1", noPW}, code: 3, want: "connection refused"},
		{name: "explain --broker with credentials", args: []string{"explain", "--broker", "mqtt://bob:" + canary + "@h", noPW}, code: 0, want: "broker mqtt://h:1883"},
		{name: "run --set broker.url with credentials, unreachable", args: []string{"run", "--set", "broker.url=mqtt://bob:" + canary + "@127.0.0.1:1", noPW}, code: 3, want: "connection refused"},
		{name: "run --broker with a broken URL", args: []string{"run", "--broker", "mqtt://bob:" + canary + "/x@h", noPW}, code: 2, want: "percent-encoded"},
		{name: "validate --set broker.url with an unknown scheme", args: []string{"validate", "--set", "broker.url=foo://bob:" + canary + "@h", noPW}, code: 2, want: "unknown scheme"},
		{name: "validate --set broker.url, not valid YAML", args: []string{"validate", "--set", "broker.url=[mqtt://bob:" + canary + "@h", noPW}, code: 2, want: "invalid value"},
		{name: "validate --set broker.urls", args: []string{"validate", "--set", "broker.urls=[mqtt://bob:" + canary + "@h, mqtt://x]", noPW}, code: 0, want: "ok"},
		{name: "validate a plan's url with credentials", args: []string{"validate", urlPlan}, code: 0, want: "ok"},
		{name: "run a plan's url with credentials, unreachable", args: []string{"run", urlPlan}, code: 3, want: "connection refused"},
		{name: "explain a plan's url with credentials", args: []string{"explain", urlPlan}, code: 0, want: "broker mqtt://127.0.0.1:1,"},
		{name: "validate a plan's urls with other credentials each", args: []string{"validate", "--set", "broker.urls=[mqtt://bob:" + canary + "@h, mqtt://eve:x@h]", noPW}, code: 2, want: "gives other credentials"},

		// The login once for every group, against the broker that wants it.
		{name: "run a plan's url with the login, every writer", args: append(append([]string{"run"}, every("urllogin")...), urlLoginPlan), code: 0, want: "PASS"},
		{name: "run --broker with the login, every writer", args: append(append([]string{"run", "--broker", loginURL}, every("brokerlogin")...), loginPlan), code: 0, want: "PASS"},
		{name: "run --username --password-file, every writer", args: append(append([]string{"run", "--broker", brokerURL, "--username", "alice", "--password-file", pwFile}, every("pwfile")...), loginPlan), code: 0, want: "PASS"},
		{name: "run MQPLAN_PASSWORD, every writer", env: map[string]string{envUsername: "alice", envPassword: canary}, args: append(append([]string{"run", "--broker", brokerURL}, every("envlogin")...), loginPlan), code: 0, want: "PASS"},
		{name: "run --broker with the login, wrong user", args: []string{"run", "--quiet", "--broker", strings.Replace(loginURL, "alice", "mallory", 1), loginPlan}, code: 3, want: "bad user name or password"},
		{name: "merge the parts of a run with the login in its URL", args: []string{"merge", "--insecure-parts", "--out", "json=" + jsonOut("urllogin.merged.json"), "--out", "html=" + jsonOut("urllogin.merged.html"), jsonOut("urllogin.part.json")}, code: 0, want: "PASS"},
		{name: "explain --broker with the login", args: []string{"explain", "--broker", loginURL, loginPlan}, code: 0, want: "broker " + brokerURL},
		{name: "validate a plan's broken urls with credentials", args: []string{"validate", urlsPlan}, code: 2, want: "is not a valid URL"},

		// --set groups.X.password.
		{name: "validate --set password", args: []string{"validate", "--set", "groups.pub.password=" + canary, noPW}, code: 0},
		{name: "explain --set password", args: []string{"explain", "--set", "groups.pub.password=" + canary, noPW}, code: 0},
		{name: "run --set password, --json", args: []string{"run", "--quiet", "--json", jsonOut("set.json"), "--set", "groups.pub.password=" + canary, noPW}, code: 0},
		{name: "run --set password, --partial", args: []string{"run", "--quiet", "--partial", jsonOut("set.part.json"), "--set", "groups.pub.password=" + canary, noPW}, code: 0},
		{name: "merge the partial of a run with --set password", args: []string{"merge", "--insecure-parts", "--json", jsonOut("set.merged.json"), jsonOut("set.part.json")}, code: 0},
		{name: "validate --set password, not valid YAML", args: []string{"validate", "--set", "groups.pub.password=[" + canary, noPW}, code: 2, want: "not shown"},
		{name: "validate --set password, a mapping", args: []string{"validate", "--set", "groups.pub.password={a: " + canary + "}", noPW}, code: 2, want: "must be a string"},
		{name: "validate --set password, a list", args: []string{"validate", "--set", "groups.pub.password=[" + canary + "]", noPW}, code: 2, want: "must be a string"},
		{name: "validate --set password, a broken ${", args: []string{"validate", "--set", `groups.pub.password="` + canary + `${"`, noPW}, code: 2, want: "malformed ${...}"},
		{name: "validate --set under a password already set", args: []string{"validate", "--set", "groups.pub.password=" + canary, "--set", "groups.pub.password.x=1", noPW}, code: 2, want: "not a mapping"},
		{name: "validate --set an index of a password already set", args: []string{"validate", "--set", "groups.pub.password=" + canary, "--set", "groups.pub.password[0]=1", noPW}, code: 2, want: "not a list"},
		{name: "validate --set a group holding a password, not valid YAML", args: []string{"validate", "--set", "groups.pub={password: " + canary, noPW}, code: 2, want: "not shown"},
		{name: "validate --set password, unknown group", args: []string{"validate", "--set", "groups.nope.password=" + canary, noPW}, code: 2, want: "no group named"},

		// password: ${VAR} in the plan.
		{name: "validate ${PW}", env: pwEnv, args: []string{"validate", envPlan}, code: 0},
		{name: "explain ${PW}", env: pwEnv, args: []string{"explain", envPlan}, code: 0},
		{name: "validate ${NOPE:-default}", args: []string{"validate", defPlan}, code: 0},
		{name: "run ${NOPE:-default}, --partial", args: []string{"run", "--quiet", "--partial", jsonOut("default.part.json"), defPlan}, code: 0},
		{name: "merge the partial of a run with ${NOPE:-default}", args: []string{"merge", "--insecure-parts", jsonOut("default.part.json")}, code: 0},
		{name: "validate a password with a broken ${", args: []string{"validate", badEnvPlan}, code: 2, want: "malformed ${...}"},
		{name: "validate a password with a bad ${reference}", args: []string{"validate", badRef}, code: 2, want: "malformed ${...}"},
		{name: "run ${PW} against the broker that wants it, --json", env: pwEnv, args: []string{"run", "--json", jsonOut("env.json"), "--broker", brokerURL, envPlan}, code: 0},
		{name: "run ${PW}, every --out format and the step summary", env: map[string]string{"PW": canary, "GITHUB_STEP_SUMMARY": jsonOut("summary.md")},
			args: []string{"run", "--quiet", "--out", "junit=" + jsonOut("env.junit.xml"), "--out", "md=" + jsonOut("env.md"),
				"--out", "csv=" + jsonOut("env.csv"), "--out", "html=" + jsonOut("env.html"), "--broker", brokerURL, envPlan}, code: 0},
		{name: "run ${PW}, wrong user", env: pwEnv, args: []string{"run", "--quiet", "--broker", brokerURL, "--set", "groups.pub.username=mallory", envPlan}, code: 3, want: "bad user name or password"},
		{name: "run ${PW}, unreachable broker, --json", env: pwEnv, args: []string{"run", "--quiet", "--json", jsonOut("unreachable.json"), "--broker", "mqtt://127.0.0.1:1", envPlan}, code: 3, want: "connection refused"},

		// emqtt-bench's -P.
		{name: "pub -P --print-plan", args: []string{"pub", "-P", canary, "-t", "t", "--print-plan"}, code: 0, want: "MQTT_PASSWORD"},
		{name: "sub --password= --print-plan", args: []string{"sub", "--password=" + canary, "-t", "t", "--print-plan"}, code: 0, want: "MQTT_PASSWORD"},
		{name: "conn -P (attached) --print-plan", args: []string{"conn", "-P" + canary, "--print-plan"}, code: 0, want: "MQTT_PASSWORD"},
		{name: "pub -rP clumped", args: []string{"pub", "-t", "t", "-rP" + canary}, code: 2, want: "cannot be combined"},
		{name: "pub -h user:password@host", args: []string{"pub", "-t", "t", "-h", "bob:" + canary + "@h", "--print-plan"}, code: 2, want: "bob:***@h"},
		{name: "conn -P with a bad option after it", args: []string{"conn", "-P", canary, "-c", "x"}, code: 2, want: "-c/--count"},
		{name: "conn -P, unreachable broker", args: []string{"conn", "-P", canary, "-h", "127.0.0.1", "-p", "1", "-c", "1", "--duration", "1s"}, code: 3},
		{name: "conn -P against the broker that wants it", args: []string{"conn", "-u", "alice", "-P", canary, "-h", bu.Hostname(), "-p", bu.Port(), "-c", "2", "--duration", "1s", "--threshold", "connect.ok == 2"}, code: 0},
		{name: "conn -P, wrong user", args: []string{"conn", "-u", "mallory", "-P", canary, "-h", bu.Hostname(), "-p", bu.Port(), "-c", "1", "--duration", "1s"}, code: 3, want: "bad user name or password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmdWith(t, cmdOpts{vars: tt.env}, tt.args...)
			out := r.stdout + r.stderr
			if r.code != tt.code || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, tt.want, r.stdout, r.stderr)
			}
			if strings.Contains(out, canary) {
				t.Errorf("the password shows:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			}
		})
	}

	// Every file written (the --json reports) is free of it too.
	files := []string{"set.part.json", "set.merged.json", "default.part.json", "set.json", "env.json", "unreachable.json", "env.junit.xml", "env.md", "env.csv", "env.html", "summary.md",
		"urllogin.merged.json", "urllogin.merged.html"}
	for _, prefix := range []string{"urllogin", "brokerlogin", "pwfile", "envlogin"} {
		files = append(files, loginFiles(prefix)...)
	}
	for _, name := range files {
		b, err := os.ReadFile(jsonOut(name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if bytes.Contains(b, []byte(canary)) || bytes.Contains(b, []byte(url.PathEscape(canary))) {
			t.Errorf("%s holds the password", name)
		}
	}

	// And the broker, told to stop, says nothing of it either.
	brokerCmd.signal(t, syscall.SIGINT)
	select {
	case tail := <-brokerTail:
		if bytes.Contains(tail, []byte(canary)) {
			t.Errorf("mqplan broker printed the password:\n%s", tail)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("mqplan broker did not stop")
	}
}
