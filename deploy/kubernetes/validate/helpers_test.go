package validate

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// The deployment, the repository and its Dockerfile, from this package's
// directory.
var (
	deployDir  = filepath.Join("..")
	repoRoot   = filepath.Join("..", "..", "..")
	dockerfile = filepath.Join(repoRoot, "Dockerfile")
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mqplan-k8s-validate-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// mqplanBinary builds cmd/mqplan once with the Dockerfile's own build
// line (its environment and flags; only -o points elsewhere), so that the
// binary the tests run is the one the image would hold.
func mqplanBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		d, err := ReadDockerfile(dockerfile)
		if err != nil {
			buildErr = err
			return
		}
		env, args, err := d.GoBuild("build")
		if err != nil {
			buildErr = err
			return
		}
		out := filepath.Join(binDir, "mqplan")
		for i := range args {
			if args[i] == "-o" && i+1 < len(args) {
				args[i+1] = out
			}
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{args, env, err, b}
			return
		}
		binPath = out
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type buildError struct {
	args, env []string
	err       error
	out       []byte
}

func (e *buildError) Error() string {
	return strings.Join(e.env, " ") + " go " + strings.Join(e.args, " ") + ": " + e.err.Error() + "\n" + string(e.out)
}

// result is one mqplan process's outcome.
type result struct {
	code           int
	stdout, stderr string
}

// runMqplan runs the binary with args and a deadline.
func runMqplan(t *testing.T, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := execMqplan(ctx, bin, nil, args...)
	if err != nil {
		t.Fatalf("mqplan %q: %v", args, err)
	}
	return r
}

// execMqplan runs the binary until it exits or ctx ends, in env (nil:
// this process's); an exit code is a result, not an error. Safe from any
// goroutine.
func execMqplan(ctx context.Context, bin string, env []string, args ...string) (result, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok && ctx.Err() == nil {
		r.code, err = ee.ExitCode(), nil
	}
	return r, err
}

var helpFlag = regexp.MustCompile(`(?m)^  -([a-z0-9][a-z0-9-]*)`)

// runFlags are the flags `mqplan run --help` lists.
func runFlags(t *testing.T, bin string) map[string]bool {
	t.Helper()
	r := runMqplan(t, bin, "run", "--help")
	if r.code != 0 {
		t.Fatalf("mqplan run --help: exit %d\n%s", r.code, r.stderr)
	}
	flags := map[string]bool{}
	for _, m := range helpFlag.FindAllStringSubmatch(r.stderr, -1) {
		flags[m[1]] = true
	}
	if !flags["broker"] || !flags["set"] {
		t.Fatalf("mqplan run --help lists no --broker or --set: the help's format changed?\n%s", r.stderr)
	}
	return flags
}

// testToken is the run's token the tests give the deployment, made as
// its comments tell a user to (head -c 32 /dev/urandom | base64 > token):
// the repository holds none, and the kustomization needs one.
const testToken = "dGVzdCB0b2tlbiBmb3IgdGhlIGpvYiwgMzIgYnl0ZXMhIQ==\n"

// copyDeploy copies the deployment's files into a temporary directory,
// applying edits (file name to old and new text, each old text required
// to be there), so a test can break one thing; it holds the run's token
// file (testToken) unless an edit names it.
func copyDeploy(t *testing.T, edits map[string][2]string) string {
	t.Helper()
	dir := t.TempDir()
	if _, ok := edits["token"]; !ok {
		if err := os.WriteFile(filepath.Join(dir, "token"), []byte(testToken), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(deployDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "token" { // a user's own token stays where it is
			continue
		}
		b, err := os.ReadFile(filepath.Join(deployDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if ed, ok := edits[e.Name()]; ok {
			if !bytes.Contains(b, []byte(ed[0])) {
				t.Fatalf("%s has no %q to edit", e.Name(), ed[0])
			}
			b = bytes.Replace(b, []byte(ed[0]), []byte(ed[1]), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name := range edits {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(edits[name][1]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func entrypoint(t *testing.T) []string {
	t.Helper()
	d, err := ReadDockerfile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := d.Entrypoint()
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// render renders dir; the shipped deployment is rendered from a copy
// holding the token a user would make (copyDeploy).
func render(t *testing.T, dir string) *Bundle {
	t.Helper()
	if dir == deployDir {
		dir = copyDeploy(t, nil)
	}
	b, err := Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
