// Command release builds mqplan's release: for every target, a static
// binary with the version stamped in, packed with the licence and the
// docs (tar.gz for linux and darwin, zip for windows), and a SHA256SUMS
// file over the archives. It is the one release command:
//
//	go run ./release -version v0.4.0 -out dist
//
// The builds are reproducible: CGO_ENABLED=0, -trimpath, the version by
// -ldflags -X, and archives whose entries are sorted, owned by 0:0 and
// dated at the commit's time (SOURCE_DATE_EPOCH when set), so that the
// same commit and version give the same bytes.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Targets are the platforms a release is built for, as GOOS/GOARCH.
// .ci/run cross-builds the same list (go run ./release -list).
var Targets = []string{
	"linux/amd64", "linux/arm64",
	"darwin/amd64", "darwin/arm64",
	"windows/amd64", "windows/arm64",
}

// extras are the files every archive holds beside the binary: the
// repository path and the name inside the archive.
var extras = [][2]string{
	{"LICENSE", "LICENSE"},
	{"NOTICE", "NOTICE"},
	{"README.md", "README.md"},
	{"CHANGELOG.md", "CHANGELOG.md"},
	{"report/assets/uplot/LICENSE", "LICENSE.uPlot"},
}

// validVersion is what -version accepts: it goes into file names and
// into the linker's -X, where a space or a quote would break the flag.
var validVersion = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// config is one release's settings, from the command line.
type config struct {
	version string
	out     string
	targets []string
	root    string    // the module's directory
	mtime   time.Time // every archive entry's time
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	version := fs.String("version", "", "the version to stamp (default: git describe --tags --always --dirty)")
	out := fs.String("out", "dist", "the directory the archives and SHA256SUMS are written to (must be empty or absent)")
	only := fs.String("targets", strings.Join(Targets, ","), "comma-separated GOOS/GOARCH to build")
	list := fs.Bool("list", false, "print the targets, one a line, and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags only: -version, -out, -targets, -list)", fs.Arg(0))
	}
	if *list {
		for _, t := range Targets {
			fmt.Fprintln(stdout, t)
		}
		return nil
	}
	c, err := newConfig(*version, *out, *only)
	if err != nil {
		return err
	}
	return c.release(stdout)
}

// newConfig checks the flags and finds the module, the version and the
// archives' time.
func newConfig(version, out, only string) (*config, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if strings.TrimSpace(string(gomod)) == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
		return nil, errors.New("run it inside the mqplan module (go run ./release)")
	}
	c := &config{version: version, out: out, root: root}
	if c.version == "" {
		b, err := c.git("describe", "--tags", "--always", "--dirty")
		if err != nil {
			return nil, fmt.Errorf("no -version given and git describe failed: %w", err)
		}
		c.version = b
	}
	if !validVersion.MatchString(c.version) {
		return nil, fmt.Errorf("-version %q: use letters, digits and . _ + - (at most 64), starting with a letter or digit", c.version)
	}
	for t := range strings.SplitSeq(only, ",") {
		t = strings.TrimSpace(t)
		if !isTarget(t) {
			return nil, fmt.Errorf("-targets: %q is not one of %s", t, strings.Join(Targets, ", "))
		}
		c.targets = append(c.targets, t)
	}
	if c.mtime, err = c.archiveTime(); err != nil {
		return nil, err
	}
	return c, nil
}

func isTarget(t string) bool {
	for _, k := range Targets {
		if t == k {
			return true
		}
	}
	return false
}

// archiveTime is SOURCE_DATE_EPOCH when set, else the time of the
// commit being built, else the zip format's earliest date: never the
// clock, which would make two builds of one commit differ.
func (c *config) archiveTime() (time.Time, error) {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970", s)
		}
		return clampZip(time.Unix(n, 0)), nil
	}
	if s, err := c.git("log", "-1", "--format=%ct"); err == nil {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return clampZip(time.Unix(n, 0)), nil
		}
	}
	return clampZip(time.Time{}), nil
}

// clampZip keeps t within what a zip entry can hold (from 1980).
func clampZip(t time.Time) time.Time {
	if min := time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC); t.Before(min) {
		return min
	}
	return t.UTC()
}

func (c *config) git(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = c.root
	b, err := cmd.Output()
	return strings.TrimSpace(string(b)), err
}

// release builds every target's archive into c.out, then SHA256SUMS.
func (c *config) release(stdout io.Writer) error {
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	if ents, err := os.ReadDir(c.out); err != nil {
		return err
	} else if len(ents) > 0 {
		return fmt.Errorf("-out %s is not empty: give a new directory, so that no old archive is mixed in", c.out)
	}
	work, err := os.MkdirTemp("", "mqplan-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// Targets build side by side, as many at once as there are CPUs: a
	// build's compile steps already use every CPU, but its link is one
	// process, and six links one after the other were most of a warm
	// release (about 40 s of 50 on 2 cores).
	names := make([]string, len(c.targets))
	errs := make([]error, len(c.targets))
	took := make([]time.Duration, len(c.targets))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, t := range c.targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			start := time.Now()
			names[i], errs[i] = c.target(t, work)
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	for i, t := range c.targets {
		if errs[i] != nil {
			return fmt.Errorf("%s: %w", t, errs[i])
		}
		fmt.Fprintf(stdout, "%s (%.1fs)\n", filepath.Join(c.out, names[i]), took[i].Seconds())
	}
	sums, err := checksums(c.out, names)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.out, "SHA256SUMS"), sums, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(stdout, filepath.Join(c.out, "SHA256SUMS"))
	return nil
}

// archiveBase is the name of a target's archive without its extension,
// and of the directory inside it: mqplan_0.4.0_linux_amd64.
func archiveBase(version, target string) string {
	goos, goarch, _ := strings.Cut(target, "/")
	return fmt.Sprintf("mqplan_%s_%s_%s", strings.TrimPrefix(version, "v"), goos, goarch)
}

// target builds one target's binary in work and packs its archive in
// c.out; it returns the archive's name.
func (c *config) target(t, work string) (string, error) {
	goos, goarch, _ := strings.Cut(t, "/")
	exe := "mqplan"
	if goos == "windows" {
		exe += ".exe"
	}
	bin := filepath.Join(work, archiveBase(c.version, t), exe)
	// -buildvcs=auto beats a GOFLAGS=-buildvcs=false: the revision goes
	// into `mqplan version` where the source is a git checkout.
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=auto",
		"-ldflags=-s -w -X main.version="+c.version,
		"-o", bin, "./cmd/mqplan")
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build: %w", err)
	}
	files := []entry{{name: exe, path: bin, mode: 0o755}}
	for _, x := range extras {
		files = append(files, entry{name: x[1], path: filepath.Join(c.root, x[0]), mode: 0o644})
	}
	base := archiveBase(c.version, t)
	name := base + ".tar.gz"
	pack := writeTarGz
	if goos == "windows" {
		name, pack = base+".zip", writeZip
	}
	if err := pack(filepath.Join(c.out, name), base, files, c.mtime); err != nil {
		return "", err
	}
	return name, nil
}

// hostTarget is this machine's GOOS/GOARCH.
func hostTarget() string { return runtime.GOOS + "/" + runtime.GOARCH }
