package emqttbench

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docsPage is the user page that lists every option (from this package's
// directory).
const docsPage = "../../../../docs/emqtt-bench.md"

// peerSources is where an emqtt-bench source tarball may sit beside the
// repository (../shared/peers from its root): the independent list of
// emqtt-bench's options.
const peerSources = "../../../../../shared/peers/emqtt-bench-*-src.tar.gz"

// longOption is a long option name in a table cell: `--name`.
var longOption = regexp.MustCompile("--([a-z][a-z0-9_-]*)")

// docsOptions reads the page's option tables by their header: the
// emqtt-bench options taken ("emqtt-bench option | commands"), mqplan's own
// ("option | plan field") and those refused ("emqtt-bench option | why"),
// each as the long names in its rows' first cell.
func docsOptions(t *testing.T) (taken, ours, refused []string) {
	t.Helper()
	f, err := os.Open(docsPage)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cur *[]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "| emqtt-bench option | commands"):
			cur = &taken
		case strings.HasPrefix(line, "| option | plan field"):
			cur = &ours
		case strings.HasPrefix(line, "| emqtt-bench option | why"):
			cur = &refused
		case !strings.HasPrefix(line, "|"):
			cur = nil
		case cur != nil && !strings.HasPrefix(line, "|---"):
			cell := strings.SplitN(line, "|", 3)[1]
			for _, m := range longOption.FindAllStringSubmatch(cell, -1) {
				*cur = append(*cur, m[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(taken) == 0 || len(ours) == 0 || len(refused) == 0 {
		t.Fatalf("%s: an option table is missing (taken %d, ours %d, refused %d options)", docsPage, len(taken), len(ours), len(refused))
	}
	return taken, ours, refused
}

// norm is a long name as the parser compares them: - and _ alike.
func norm(s string) string { return strings.ReplaceAll(s, "_", "-") }

func sortedNorm(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = norm(n)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestDocsListEveryOption: docs/emqtt-bench.md's tables name exactly the
// options the parser takes (emqtt-bench's and mqplan's own, each in its
// table) and refuses.
func TestDocsListEveryOption(t *testing.T) {
	taken, ours, refused := docsOptions(t)
	var codeTaken, codeOurs, codeRefused []string
	for _, opt := range options {
		// --help is emqtt-bench's too, though --help lists it with
		// mqplan's own (-h is the host).
		if opt.ours && opt.long != "help" {
			codeOurs = append(codeOurs, opt.long)
		} else {
			codeTaken = append(codeTaken, opt.long)
		}
	}
	for _, u := range unsupported {
		codeRefused = append(codeRefused, u.long)
	}
	for _, c := range []struct {
		table      string
		docs, code []string
	}{
		{"emqtt-bench options taken", taken, codeTaken},
		{"mqplan's own options", ours, codeOurs},
		{"emqtt-bench options refused", refused, codeRefused},
	} {
		d, k := sortedNorm(c.docs), sortedNorm(c.code)
		if !slices.Equal(d, k) {
			t.Errorf("%s: %s lists %v, the parser has %v", c.table, docsPage, d, k)
		}
	}
}

// erlOption is one entry of emqtt-bench's getopt option lists:
// {Name, Short, "long", Type, Help}.
var erlOption = regexp.MustCompile(`\{\s*[a-z_]+\s*,\s*(?:\$.|undefined|0)\s*,\s*"([a-z0-9_-]+)"`)

// TestSourceOptionsAllAnswered reads emqtt-bench's own option lists from
// its source (src/emqtt_bench.erl in the tarball beside the repository)
// and checks that each option is taken or refused with a reason, by the
// parser and on the docs page.
func TestSourceOptionsAllAnswered(t *testing.T) {
	matches, _ := filepath.Glob(peerSources)
	if len(matches) == 0 {
		t.Skipf("no emqtt-bench source tarball at %s (relative to this package): the check against emqtt-bench's own option list is skipped", peerSources)
	}
	src, err := erlSource(matches[len(matches)-1])
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range erlOption.FindAllStringSubmatch(src, -1) {
		names = append(names, m[1])
	}
	names = sortedNorm(names)
	if len(names) < 30 {
		t.Fatalf("read only %d options from %s: %v; has the source's shape changed?", len(names), matches[len(matches)-1], names)
	}
	taken, ours, refused := docsOptions(t)
	documented := sortedNorm(append(append(taken, ours...), refused...))
	for _, n := range names {
		if !slices.Contains(documented, n) {
			t.Errorf("emqtt-bench's --%s is not on %s", n, docsPage)
		}
		opt, err := lookupLong(Pub, n)
		if err != nil && (strings.Contains(err.Error(), "unknown option") || !strings.Contains(err.Error(), "not supported: ")) {
			if opt, err = lookupLong(Sub, n); err != nil {
				opt, err = lookupLong(Conn, n)
			}
		}
		switch {
		case err == nil && opt.ours && opt.long != "help":
			t.Errorf("emqtt-bench's --%s is taken as an mqplan option of the same name", n)
		case err != nil && !strings.Contains(err.Error(), "not supported: "):
			t.Errorf("emqtt-bench's --%s is neither taken nor refused with a reason: %v", n, err)
		}
	}
	t.Logf("%d emqtt-bench options from %s, each taken or refused", len(names), filepath.Base(matches[len(matches)-1]))
}

// erlSource is src/emqtt_bench.erl from an emqtt-bench source tarball,
// read at most 1 MiB.
func erlSource(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return "", err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return "", errors.New(path + ": no src/emqtt_bench.erl in it")
		}
		if err != nil {
			return "", err
		}
		if strings.HasSuffix(h.Name, "/src/emqtt_bench.erl") && !strings.Contains(h.Name, "_checkouts") {
			b, err := io.ReadAll(io.LimitReader(tr, 1<<20))
			return string(b), err
		}
	}
}
