package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/loopback"
	"github.com/mqplan/mqplan/partial"
)

const (
	testToken  = "dGhlIHJ1bidzIHRva2VuLCAzMiBieXRlcyBsb25nISE="
	otherToken = "YW5vdGhlciB0b2tlbiwgb2YgdGhlIHNhbWUgbGVuZ3Ro"
)

// writeToken writes the test's token to a file in dir, as a user makes
// one (base64 and a newline), and returns its name.
func writeToken(t *testing.T, dir string) string {
	t.Helper()
	return writeTokenAs(t, dir, "token", testToken+"\n")
}

func writeTokenAs(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// noTokenShown fails the test when out shows a token.
func noTokenShown(t *testing.T, out string) {
	t.Helper()
	for _, tok := range []string{testToken, otherToken} {
		if strings.Contains(out, tok) {
			t.Errorf("the output shows a token:\n%s", out)
		}
	}
}

// TestShardImposter: a shard that runs the same plan, run id and build as
// the real ones but has no token, or another, is refused at its hello
// (exit 2); the coordinator says so in one line naming its address, and
// the run, which the genuine shard 1 then completes, is INCOMPLETE (exit
// 3), never PASS.
func TestShardImposter(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(5 * time.Second)
	dir := t.TempDir()
	tok, other := writeToken(t, dir), writeTokenAs(t, dir, "other", otherToken)
	for _, tc := range []struct {
		name  string
		extra []string // the imposter's token
		says  string
	}{
		{"no token", nil, "the shard has no secret"},
		{"another token", []string{"--token-file", other}, "does not match the run's secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := loopback.FreeAddr(t)
			shard := func(i int, extra ...string) []string {
				args := []string{"run", "--shard", fmt.Sprintf("%d/2", i), "--coordinator", addr, "--run-id", "imposter",
					"--coordinator-timeout", "20s", "--broker", b.URL(), "--partial", filepath.Join(dir, tc.name+fmt.Sprint(i)+".json"),
					"--set", "duration=1s", "--quiet"}
				return append(append(args, extra...), "testdata/cli/pass.yaml")
			}
			s0 := start(t, shard(0, "--token-file", tok)...)
			imp := start(t, shard(1, tc.extra...)...)
			ci, outi := imp.exit(t)
			if ci != 2 || !strings.Contains(outi, "authentication failed") || !strings.Contains(outi, tc.says) {
				t.Fatalf("imposter: exit %d, want 2 refused saying %q\n%s", ci, tc.says, outi)
			}
			s1 := start(t, shard(1, "--token-file", tok)...)
			c1, out1 := s1.exit(t)
			c0, out0 := s0.exit(t)
			if c1 != 0 {
				t.Errorf("genuine shard 1: exit %d\n%s", c1, out1)
			}
			if c0 != 3 || !strings.Contains(out0, "INCOMPLETE") || strings.Count(out0, "mqplan: refused a peer at 127.0.0.1:") != 1 ||
				!strings.Contains(out0, "1 peers failed authentication") || !strings.Contains(out0, tc.says) {
				t.Errorf("coordinator: exit %d, want 3, INCOMPLETE, one line refusing the imposter saying %q\n%s", c0, tc.says, out0)
			}
			for _, out := range []string{outi, out0, out1} {
				noTokenShown(t, out)
			}
		})
	}
}

// TestTokenRules: a token is read from a file (or the environment), never
// empty or short; without one a coordinator listens on loopback only, and
// says so, and one bound beyond it is refused naming --token-file.
func TestTokenRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := writeToken(t, dir)
	short := writeTokenAs(t, dir, "short", "abc\n")
	empty := writeTokenAs(t, dir, "empty", "\n\n")
	huge := writeTokenAs(t, dir, "huge", strings.Repeat("a", maxTokenFile+1))
	shard0 := func(coordAddr string, extra ...string) []string {
		return append(append([]string{"run", "--shard", "0/2", "--coordinator", coordAddr, "--run-id", "x",
			"--broker", "mqtt://127.0.0.1:1", "--coordinator-timeout", "300ms", "--quiet"}, extra...), "testdata/cli/pass.yaml")
	}
	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
		code int
		want []string
		not  []string
	}{
		{"beyond loopback without a token", nil, shard0("0.0.0.0:0"), 2, []string{"beyond loopback", "--token-file FILE", "head -c 32 /dev/urandom | base64 > token"}, nil},
		{"beyond loopback with a token", nil, shard0("0.0.0.0:0", "--token-file", tok), 3, []string{"never joined"}, []string{"beyond loopback", "loopback only"}},
		{"beyond loopback with MQPLAN_TOKEN_FILE", map[string]string{envTokenFile: tok}, shard0("0.0.0.0:0"), 3, []string{"never joined"}, []string{"beyond loopback"}},
		{"loopback without a token", nil, shard0("127.0.0.1:0"), 3, []string{"no token (--token-file): the coordinator listens on loopback only (127.0.0.1:"}, nil},
		{"a short token", nil, shard0("127.0.0.1:0", "--token-file", short), 2, []string{"--token-file " + short + ": the token has 3 bytes, fewer than the 16"}, nil},
		{"an empty token", nil, shard0("127.0.0.1:0", "--token-file", empty), 2, []string{"--token-file " + empty + ": the token is empty"}, nil},
		{"a huge token file", nil, shard0("127.0.0.1:0", "--token-file", huge), 2, []string{"larger than 4096 bytes"}, nil},
		{"no token file", nil, shard0("127.0.0.1:0", "--token-file", filepath.Join(dir, "nope")), 2, []string{"--token-file " + filepath.Join(dir, "nope")}, nil},
		{"a short MQPLAN_TOKEN_FILE", map[string]string{envTokenFile: short}, shard0("127.0.0.1:0"), 2, []string{envTokenFile + "=" + short + ": the token has 3 bytes"}, nil},
		{"a short MQPLAN_TOKEN", map[string]string{envToken: "abc"}, shard0("127.0.0.1:0"), 2, []string{envToken + ": the token has 3 bytes"}, []string{"abc"}},
		{"--workers with --token-file", nil, []string{"run", "--workers", "2", "--token-file", tok, "testdata/cli/pass.yaml"}, 2, []string{"--workers with --token-file"}, nil},
		{"--token-file alone", nil, []string{"run", "--token-file", tok, "testdata/cli/pass.yaml"}, 2, []string{"only with --shard"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCmdWith(t, cmdOpts{vars: tc.vars}, tc.args...)
			out := r.stdout + r.stderr
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(out, w) {
					t.Errorf("output holds %q:\n%s", w, out)
				}
			}
			noTokenShown(t, out)
		})
	}
}

// TestMergeChecksSignatures: mqplan merge takes a part signed with the
// run's token, and refuses (exit 2, naming the file and why) one altered
// by a byte, one whose signature was stripped, one signed with another
// token, and an unsigned one; --insecure-parts merges them and says the
// parts were not authenticated.
func TestMergeChecksSignatures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := writeToken(t, dir)
	signed := filepath.Join(dir, "signed.json")
	if r := runCmd(t, "run", "--quiet", "--partial", signed, "--token-file", tok, "testdata/cli/pass.yaml"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	unsigned := filepath.Join(dir, "unsigned.json")
	if r := runCmd(t, "run", "--quiet", "--partial", unsigned, "testdata/cli/pass.yaml"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	data, err := os.ReadFile(signed)
	if err != nil {
		t.Fatal(err)
	}
	if !partial.Signed(data) || bytes.Contains(data, []byte(testToken)) {
		t.Fatalf("the part is not signed, or shows the token")
	}
	// A figure changed by one byte: "sent": 12 becomes "sent": 13, or any
	// digit after the first "sent" flipped.
	i := bytes.Index(data, []byte(`"sent": `)) + len(`"sent": `)
	altered := bytes.Clone(data)
	altered[i] ^= 1
	stripped := append(bytes.Clone(data[:bytes.LastIndex(data, []byte(",\n \"mqplan_mac\""))]), "\n}\n"...)
	f, err := partial.Parse("signed", data)
	if err != nil {
		t.Fatal(err)
	}
	var other bytes.Buffer
	if err := partial.WriteSigned(&other, f, []byte(otherToken)); err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	alteredF, strippedF, otherF := write("altered.json", altered), write("stripped.json", stripped), write("other.json", other.Bytes())
	const unauth = "the parts were not authenticated"
	runCmdCases(t, []cmdCase{
		{name: "signed, with the token", args: []string{"merge", "--token-file", tok, signed}, code: 0, absent: []string{unauth}},
		{name: "a byte altered", args: []string{"merge", "--token-file", tok, alteredF}, code: 2, want: []string{alteredF + ": altered: its bytes do not match"}},
		{name: "the signature stripped", args: []string{"merge", "--token-file", tok, strippedF}, code: 2, want: []string{strippedF + ": unsigned"}},
		{name: "signed with another token", args: []string{"merge", "--token-file", tok, otherF}, code: 2, want: []string{otherF + ": signed with another secret"}},
		{name: "unsigned, with the token", args: []string{"merge", "--token-file", tok, unsigned}, code: 2, want: []string{unsigned + ": unsigned", "--insecure-parts"}},
		{name: "unsigned, without a token", args: []string{"merge", unsigned}, code: 2, want: []string{unsigned + ": unsigned (written by a run without a token)", "--insecure-parts"}},
		{name: "signed, without a token", args: []string{"merge", signed}, code: 2, want: []string{signed + ": signed, and no token to check it"}},
		{name: "the signature stripped, --insecure-parts", args: []string{"merge", "--insecure-parts", "--token-file", tok, strippedF}, code: 0, want: []string{unauth}},
		{name: "another token, --insecure-parts", args: []string{"merge", "--insecure-parts", otherF}, code: 0, want: []string{unauth}},
		{name: "unsigned, --insecure-parts", args: []string{"merge", "--insecure-parts", unsigned}, code: 0, want: []string{unauth}},
	})
	r := runCmdWith(t, cmdOpts{vars: map[string]string{envTokenFile: tok}}, "merge", signed)
	if r.code != 0 {
		t.Errorf("merge with %s: exit %d\n%s", envTokenFile, r.code, r.stderr)
	}
	r = runCmdWith(t, cmdOpts{vars: map[string]string{envToken: testToken}}, "merge", signed)
	if r.code != 0 {
		t.Errorf("merge with %s: exit %d\n%s", envToken, r.code, r.stderr)
	}
}
