package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
)

// The commands the user docs show are run here, so that a page cannot
// keep a flag, a plan path or an exit code that mqplan no longer has.
// Each page's commands run in the page's order, in a directory of the
// page's own (a command may read what an earlier one wrote); the pages run
// side by side. docs/cli.md is left out: it is the commands' own --help,
// whose examples TestCommandExamples checks.

// docBroker stands for "your broker" in the docs: mqtt://127.0.0.1:1883
// in a command or a page's plan is rewritten to a broker this test starts.
const docBroker = "mqtt://127.0.0.1:1883"

// docRunBounds shorten every `mqplan run` of the docs to a few seconds:
// the command line is under test here, not the plan's figures (the
// shipped plans' verdicts are TestShippedPlans').
var docRunBounds = []string{"--set", "warmup=0s", "--set", "ramp=0s", "--set", "duration=1s", "--set", "drain=2s"}

// docSkip is every reason a command shown in the docs is not run, each
// with the test that decides it. A skipped command is logged with its
// reason; anything else is run.
var docSkip = []struct {
	reason string
	skip   func(c *docCommand) bool
}{
	{"a synopsis: its arguments are placeholders", func(c *docCommand) bool {
		return slicesContainsFunc(c.args, func(a string) bool { return strings.ContainsAny(a, "[]") || a == "PLAN" || a == "I/N" || a == "N|auto" })
	}},
	{"runs a broker until Ctrl-C", func(c *docCommand) bool { return c.args[0] == "broker" }},
	{"an emqtt-bench command: connects to the broker at -h/-p and runs until Ctrl-C", func(c *docCommand) bool {
		return (c.args[0] == "conn" || c.args[0] == "sub" || c.args[0] == "pub") && !slicesContains(c.args, "--print-plan")
	}},
	{"connects to a broker of its own (not 127.0.0.1:1883, which the test provides)", func(c *docCommand) bool {
		connects := c.args[0] == "run" || c.args[0] == "find-max"
		return connects && (foreignBroker(strings.Join(c.args, " ")) || foreignBroker(withoutComments(c.planText)))
	}},
	{"one shard of a run over several machines: needs the other shards", func(c *docCommand) bool {
		return slicesContains(c.args, "--shard") || slicesContains(c.args, "--coordinator")
	}},
	{"--workers starts child mqplan processes (their equivalence with one process is checked by the test suite)", func(c *docCommand) bool {
		return slicesContains(c.args, "--workers")
	}},
	{"find-max runs trials for minutes by design (its search is tested on its own)", func(c *docCommand) bool { return c.args[0] == "find-max" }},
	{"serves metrics on a fixed port and lingers 30 s after the run", func(c *docCommand) bool { return slicesContains(c.args, "--metrics-listen") }},
	{"pushes metrics to a Prometheus of its own (internal/promtest's tests push to a private one)", func(c *docCommand) bool {
		return slicesContains(c.args, "--metrics-push")
	}},
	{"merges parts of a sharded run that no command of the page wrote", func(c *docCommand) bool { return c.args[0] == "merge" && c.missing != "" }},
	{"names a file the page leaves to the reader", func(c *docCommand) bool { return c.missing != "" }},
	{"uses shell features beyond a redirect", func(c *docCommand) bool { return c.shell }},
}

// docCommand is one command line of a page.
type docCommand struct {
	where    string            // file:line
	text     string            // as the page shows it
	env      map[string]string // VAR=value before the command
	args     []string          // after "mqplan"
	stdout   string            // > FILE, "" for none
	comment  string            // after an unquoted #
	shell    bool              // a pipe, a substitution, ...
	planText string            // the page's plan file it names, as the page shows it
	missing  string            // an input file neither the repository nor the page provides
	// pagePlans are the plan files the page showed before the command.
	pagePlans map[string]string
}

// docStep is a command, or a plan file a page shows (a YAML block whose
// first line is "# NAME.yaml"), in the page's order.
type docStep struct {
	cmd        *docCommand
	file, body string
}

var (
	docCommandLine = regexp.MustCompile(`^(?:- )?(?:run: )?(?:\$ )?((?:[A-Z_]+=\S*\s+)*)(?:mqplan|go run \./cmd/mqplan)(\s.*)?$`)
	docPlanName    = regexp.MustCompile(`^# ([\w.-]+\.ya?ml)\s*$`)
	docExitCode    = regexp.MustCompile(`\bexit (\d)\b`)
	docBrokerURL   = regexp.MustCompile(`\b(?:mqtts?|tcp|ssl|tls|wss?)://[^\s'"]+`)
)

// TestDocCommands runs every command of README.md and docs/ that can run
// offline.
func TestDocCommands(t *testing.T) {
	t.Parallel()
	fixture := filepath.Join(t.TempDir(), "fixture.json")
	if r := runCmd(t, append([]string{"run", "--quiet", "--json", fixture}, append(docRunBounds, "testdata/cli/pass.yaml")...)...); r.code != 0 {
		t.Fatalf("the fixture result: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	found := 0
	for _, page := range userDocs(t) {
		if page == cliReferencePath || !strings.HasSuffix(page, ".md") {
			continue
		}
		steps := docSteps(t, page)
		for _, s := range steps {
			if s.cmd != nil {
				found++
			}
		}
		t.Run(page, func(t *testing.T) {
			t.Parallel()
			runDocSteps(t, steps, fixture)
		})
	}
	if found < 40 {
		t.Errorf("found %d commands in the docs: fewer than there are", found)
	}
}

// runDocSteps runs one page's steps in a directory of its own, with a
// broker of its own for "your broker" (pages run side by side, and the
// same plan's client ids on one broker would take over each other's
// sessions).
func runDocSteps(t *testing.T, steps []docStep, fixture string) {
	b, err := broker.Start(broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(5 * time.Second) })
	brokerURL, dir := b.URL(), t.TempDir()
	run := 0
	for _, s := range steps {
		if s.cmd == nil {
			body := strings.ReplaceAll(s.body, docBroker, brokerURL)
			if err := os.WriteFile(filepath.Join(dir, s.file), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		c := s.cmd
		args := prepareDocArgs(t, c, dir, brokerURL, fixture)
		if reason := docSkipReason(c); reason != "" {
			t.Logf("%s: not run (%s): %s", c.where, reason, c.text)
			continue
		}
		run++
		r := runCmdWith(t, cmdOpts{vars: c.env}, args...)
		if c.stdout != "" {
			if err := os.WriteFile(filepath.Join(dir, c.stdout), []byte(r.stdout), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if msg := docExitProblem(c, r); msg != "" {
			t.Errorf("%s: %s: %s\n%s%s", c.where, c.text, msg, r.stdout, r.stderr)
		}
	}
	t.Logf("%d commands run", run)
}

// docSkipReason is the reason c is not run, "" to run it.
func docSkipReason(c *docCommand) string {
	for _, s := range docSkip {
		if s.skip(c) {
			return s.reason
		}
	}
	return ""
}

// docExitProblem says what is wrong with r's exit code for c, "" if
// nothing. A command's comment may say "exit N"; otherwise it must pass,
// except that a run, or a report or comparison of runs, may come out as
// any completed verdict (1 or 4): the figures of a run cut to a second,
// with the pages side by side on a shared machine (and several times
// slower under the race detector), are not the plan's, whose verdicts
// the shipped plans' tests judge. What a stale page gives, exit 2 (a
// flag, a key, a file gone) or 3 (the run could not complete), always
// fails.
func docExitProblem(c *docCommand, r result) string {
	want := 0
	if m := docExitCode.FindStringSubmatch(c.comment); m != nil {
		want = int(m[1][0] - '0')
	}
	if r.code == want {
		return ""
	}
	verdict := c.args[0] == "run" || c.args[0] == "report" || c.args[0] == "compare"
	if want == 0 && verdict && (r.code == 1 || r.code == 4) {
		return ""
	}
	return fmt.Sprintf("exit %d, want %d", r.code, want)
}

// docBoolFlags are the flags of the docs' commands that take no value.
var docBoolFlags = []string{"--quiet", "--fail-on-regression", "--insecure-parts", "--allow-missing", "--print-plan", "--coordinator-dial"}

// prepareDocArgs makes c's command line runnable here: relative output
// and input files in dir (inputs the page does not write get a stand-in:
// a saved result, a token), globs expanded, "your broker" the test's, and
// a run bounded. It records in c what it could not provide.
func prepareDocArgs(t *testing.T, c *docCommand, dir, brokerURL, fixture string) []string {
	t.Helper()
	out := []string{c.args[0]}
	for i := 1; i < len(c.args); i++ {
		a := strings.ReplaceAll(c.args[i], docBroker, brokerURL)
		if !strings.HasPrefix(a, "-") {
			switch {
			case strings.Contains(a, "*"):
				out = append(out, docGlob(c, dir, a)...)
			case c.args[0] == "completion":
				out = append(out, a)
			default:
				out = append(out, docInput(t, c, dir, a, fixture))
			}
			continue
		}
		if strings.Contains(a, "=") || slicesContains(docBoolFlags, a) || i+1 == len(c.args) {
			out = append(out, a)
			continue
		}
		i++
		v := strings.ReplaceAll(c.args[i], docBroker, brokerURL)
		switch a {
		case "--json", "--partial", "--cpuprofile":
			v = inDir(dir, v)
		case "--out":
			format, file, _ := strings.Cut(v, "=")
			v = format + "=" + inDir(dir, file)
		case "--baseline", "--token-file":
			v = docInput(t, c, dir, v, fixture)
		}
		out = append(out, a, v)
	}
	if c.args[0] == "run" {
		out = append(out, docRunBounds...)
	}
	return out
}

// inDir places a relative file name in dir; "-" and absolute paths stay.
func inDir(dir, name string) string {
	if name == "-" || filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(dir, name)
}

// docInput resolves an input file of c: the repository's, or one in dir
// (written by an earlier step, or a stand-in: a token, or for a saved
// result the page did not write, the latest result in dir or the fixture).
func docInput(t *testing.T, c *docCommand, dir, name, fixture string) string {
	t.Helper()
	if _, err := os.Stat(name); err == nil && !filepath.IsAbs(name) {
		return name
	}
	if first, _, _ := strings.Cut(name, "/"); slicesContains([]string{"plans", "testdata", "deploy", "docs", "bench"}, first) {
		t.Errorf("%s: %s names %s, which the repository does not have", c.where, c.text, name)
		c.missing = name
		return name
	}
	path := inDir(dir, name)
	if data, err := os.ReadFile(path); err == nil {
		if page, ok := c.pagePlans[name]; ok {
			data = []byte(page) // as the page shows it, before "your broker" was rewritten
		}
		if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
			c.planText += string(data)
		}
		return path
	}
	switch {
	case name == "token":
		writeTokenAs(t, dir, name, testToken+"\n")
	case strings.HasSuffix(name, ".json") && !strings.Contains(name, "part"):
		src := fixture
		if m, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(m) > 0 {
			src = latest(m)
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		c.missing = name
	}
	return path
}

// latest is the most recently written of files.
func latest(files []string) string {
	best, bestTime := files[0], time.Time{}
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.ModTime().After(bestTime) {
			best, bestTime = f, fi.ModTime()
		}
	}
	return best
}

// docGlob expands a shell pattern against the repository, else the
// page's directory; a pattern matching nothing is recorded as missing.
func docGlob(c *docCommand, dir, pattern string) []string {
	if m, _ := filepath.Glob(pattern); len(m) > 0 {
		return m
	}
	if m, _ := filepath.Glob(inDir(dir, pattern)); len(m) > 0 {
		return m
	}
	c.missing = pattern
	return []string{pattern}
}

// withoutComments drops YAML comments ("  # ...") from a plan's lines, so
// that a comment naming another broker does not count as its broker.
func withoutComments(plan string) string {
	var b strings.Builder
	for _, line := range strings.Split(plan, "\n") {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// foreignBroker reports whether s names a broker URL other than the
// docs' "your broker".
func foreignBroker(s string) bool {
	for _, u := range docBrokerURL.FindAllString(s, -1) {
		if u != docBroker {
			return true
		}
	}
	return false
}

// docSteps reads a page's commands and plan files in order: lines of
// fenced code blocks (but "text" ones, which show output) that run mqplan
// or `go run ./cmd/mqplan`, and YAML blocks that name their file.
func docSteps(t *testing.T, page string) []docStep {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var steps []docStep
	plans := map[string]string{}
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		fence, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		lang := strings.TrimSpace(fence)
		start := i + 1
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
		}
		block := lines[start:min(i, len(lines))]
		if lang == "yaml" && len(block) > 0 {
			if m := docPlanName.FindStringSubmatch(block[0]); m != nil {
				body := strings.Join(block, "\n") + "\n"
				plans[m[1]] = body
				steps = append(steps, docStep{file: m[1], body: body})
				continue
			}
		}
		if lang == "text" {
			continue
		}
		for j, line := range block {
			m := docCommandLine.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil {
				continue
			}
			c := parseDocCommand(m[1], m[2])
			if len(c.args) == 0 {
				continue
			}
			c.where, c.text = fmt.Sprintf("%s:%d", page, start+j+1), strings.TrimSpace(line)
			c.pagePlans = maps.Clone(plans)
			steps = append(steps, docStep{cmd: c})
		}
	}
	return steps
}

// parseDocCommand splits a command line as a shell would, for what the
// docs use: quotes, a trailing # comment, one > redirect and VAR=value
// prefixes; anything else of the shell's marks the command.
func parseDocCommand(envPart, rest string) *docCommand {
	c := &docCommand{env: map[string]string{}}
	for _, kv := range strings.Fields(envPart) {
		k, v, _ := strings.Cut(kv, "=")
		c.env[k] = v
	}
	var words []string
	var cur strings.Builder
	inWord, quote, redirect := false, byte(0), false
	flush := func() {
		if inWord {
			if redirect {
				c.stdout, redirect = cur.String(), false
			} else {
				words = append(words, cur.String())
			}
		}
		cur.Reset()
		inWord = false
	}
	for i := 0; i < len(rest); i++ {
		ch := rest[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else {
				cur.WriteByte(ch)
			}
		case ch == '\'' || ch == '"':
			quote, inWord = ch, true
		case ch == ' ' || ch == '\t':
			flush()
		case ch == '#' && !inWord:
			c.comment = rest[i:]
			i = len(rest)
		case ch == '>':
			flush()
			redirect = true
		case strings.IndexByte("|<;&`", ch) >= 0 || ch == '$' && i+1 < len(rest) && rest[i+1] == '(':
			c.shell = true
			cur.WriteByte(ch)
			inWord = true
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	flush()
	c.args = words
	return c
}

// slicesContains reports whether list holds s.
func slicesContains(list []string, s string) bool {
	return slicesContainsFunc(list, func(a string) bool { return a == s })
}

// slicesContainsFunc reports whether some element of list satisfies f.
func slicesContainsFunc(list []string, f func(string) bool) bool {
	for _, a := range list {
		if f(a) {
			return true
		}
	}
	return false
}
