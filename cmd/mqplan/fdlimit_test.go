package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/report"
)

// compileText compiles a plan given as text, for the pure checks.
func compileText(t *testing.T, text string) *plans.Program {
	t.Helper()
	plan, err := plans.LoadBytes("p.yaml", []byte(text), plans.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := plans.Compile(plan, plans.CompileOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// TestFitsOpenFileLimit: a run is refused before it connects when a
// process of it would need more descriptors than the limit (its connects
// would fail midway with EMFILE), with the advice that fits: the --workers
// count, or a broker of its own for the embedded one.
func TestFitsOpenFileLimit(t *testing.T) {
	const pairs = "duration: 1s\ngroups:\n  - {name: s, count: 1000, subscribe: {topic: t/%%i}}\n  - {name: p, count: 1000, publish: {topic: t/%%i, every: 1s}}\nbroker: {url: %s}\n"
	external := compileText(t, fmt.Sprintf(pairs, "mqtt://127.0.0.1:1883"))
	embedded := compileText(t, fmt.Sprintf(pairs, "embedded"))
	halves, err := plans.Assign(external, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		check func(limit int) error
		limit int
		want  string // "" when it fits
	}{
		{"one process, unknown limit", func(l int) error { return fitsOneProcess(external, report.Limits{OpenFiles: l}) }, 0, ""},
		{"one process fits exactly", func(l int) error { return fitsOneProcess(external, report.Limits{OpenFiles: l}) }, 2032, ""},
		{"one process, one descriptor short", func(l int) error { return fitsOneProcess(external, report.Limits{OpenFiles: l}) }, 2031,
			"the plan needs 2032 file descriptors (2000 connections) but this process may open 2031 (ulimit -Hn): past that, connects fail midway with \"too many open files\"; run it as 2 worker processes: mqplan run --workers 2 (or --workers auto)"},
		{"one process, three workers' worth", func(l int) error { return fitsOneProcess(external, report.Limits{OpenFiles: l}) }, 956, "run it as 3 worker processes: mqplan run --workers 3"},
		{"embedded, workers fit beside the broker", func(l int) error { return fitsOneProcess(embedded, report.Limits{OpenFiles: l}) }, 3000,
			"needs 4032 file descriptors (2000 connections with the embedded broker holding the other end of each in the same process) but this process may open 3000 (ulimit -Hn): past that, connects fail midway with \"too many open files\"; run its clients in one worker process apart from the broker: mqplan run --workers 1 (or --workers auto)"},
		{"embedded, the broker alone does not fit", func(l int) error { return fitsOneProcess(embedded, report.Limits{OpenFiles: l}) }, 2000,
			"no number of processes lifts that for the embedded broker: give a broker of its own (--broker URL), and --workers"},
		{"two shards fit", func(l int) error { return fitsShards(external, halves, report.Limits{OpenFiles: l}, -1, false, "more") }, 1032, ""},
		{"two shards, one short", func(l int) error {
			return fitsShards(external, halves, report.Limits{OpenFiles: l}, -1, false, "use more")
		}, 1031,
			"shard 0/2 needs 1032 file descriptors (1000 connections) but a process may open 1031 (ulimit -Hn): past that, connects fail midway with \"too many open files\"; use more"},
		{"shard 1 checks its own share only", func(l int) error {
			return fitsShards(external, halves, report.Limits{OpenFiles: l}, 1, false, "use more")
		}, 1031, "shard 1/2 needs 1032"},
		{"the --workers parent's embedded broker fits", func(l int) error { return fitsShards(external, halves, report.Limits{OpenFiles: l}, -1, true, "more") }, 2032, ""},
		{"the --workers parent's embedded broker does not", func(l int) error { return fitsShards(external, halves, report.Limits{OpenFiles: l}, -1, true, "more") }, 2031,
			"the embedded broker, in this process, would hold the other end of all 2000 connections but the process may open 2031 files (ulimit -Hn): give a broker of its own (--broker URL)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.check(tc.limit)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != exitInvalid {
				t.Fatalf("got %v, want an invalid-input error (exit 2)", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %q\nwant it to hold %q", err, tc.want)
			}
		})
	}
}

// TestRunPastOpenFileLimitRefused: mqplan run of a plan with more
// clients than this process may open files is refused at once, exit 2,
// naming the --workers count, instead of failing its connects midway
// (nothing listens at the broker's address: a run that tried would say
// so).
func TestRunPastOpenFileLimitRefused(t *testing.T) {
	limit := systemLimits().OpenFiles
	if limit <= 0 || limit > 200_000 {
		t.Skipf("open-file limit %d: a plan past it is too big for a test", limit)
	}
	path := filepath.Join(t.TempDir(), "big.yaml")
	text := fmt.Sprintf("broker: {url: \"mqtt://127.0.0.1:1\"}\nduration: 1s\ngroups:\n  - {name: idle, count: %d}\n", limit)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCmd(t, "run", "--quiet", path)
	want := fmt.Sprintf("the plan needs %d file descriptors (%d connections) but this process may open %d", limit+32, limit, limit)
	if r.code != exitInvalid || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "mqplan run --workers 2") {
		t.Fatalf("exit %d, want %d with %q and the --workers advice\n%s%s", r.code, exitInvalid, want, r.stdout, r.stderr)
	}
}

// TestScalePlanSplit: bench/scale.sh's plan (24,000 connections, two
// brokers, two source addresses) does not fit one process under a
// 20,000 open-file limit, --workers auto makes it two workers, and
// whatever the shard count each subscriber shares its broker and its
// shard with its publisher (the brokers are not bridged: a pair split
// over two would lose every message), each worker binding only its own
// source address when there are enough for one each.
func TestScalePlanSplit(t *testing.T) {
	plan, err := plans.Load("bench/plans/scale-24k.yaml", plans.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	limits := report.Limits{OpenFiles: 20000}
	for _, n := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("%d shards", n), func(t *testing.T) {
			prog, err := plans.Compile(plan, plans.CompileOptions{RunID: "r"})
			if err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				if fitsOneProcess(prog, limits) == nil {
					t.Error("one process under 20,000 files: want it refused")
				}
				if w, err := autoWorkers(prog, limits.OpenFiles); w != 2 || err != nil {
					t.Errorf("--workers auto = %d, %v; want 2", w, err)
				}
				return
			}
			a, err := plans.Assign(prog, n)
			if err != nil {
				t.Fatal(err)
			}
			if err := fitsShards(prog, a, limits, -1, false, ""); err != nil {
				t.Error(err)
			}
			pairs := len(prog.Clients) / 2
			for i := range pairs {
				sub, pub := &prog.Clients[i], &prog.Clients[pairs+i]
				if sub.URL != pub.URL || a.Shard[i] != a.Shard[pairs+i] {
					t.Fatalf("pair %d: subscriber on %s shard %d, publisher on %s shard %d", i, sub.URL, a.Shard[i], pub.URL, a.Shard[pairs+i])
				}
			}
			sa := prog.Plan.Broker.SourceAddresses
			for s := range n {
				partitionSources(prog, a.Mask(s), s, n)
				for i, c := range prog.Clients {
					want := sa[s%len(sa)]
					if a.Shard[i] == int32(s) && c.SourceAddr != want {
						t.Fatalf("shard %d/%d: client %d binds %s, want %s", s, n, i, c.SourceAddr, want)
					}
				}
			}
		})
	}
}
