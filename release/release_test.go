package main

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRelease runs the release command for every target into a temporary
// directory and checks what a user downloads: every archive with the
// binary, licence and docs in it, SHA256SUMS verifying each, and the
// host's binary printing the stamped version. Cross-building six targets
// takes minutes on a cold build cache, so the suite skips it and .ci/run
// runs it (MQPLAN_TEST_RELEASE=1) after its cross-build step has filled
// the cache with the same flags.
func TestRelease(t *testing.T) {
	if os.Getenv("MQPLAN_TEST_RELEASE") == "" {
		t.Skip("cross-builds every target: .ci/run runs it with MQPLAN_TEST_RELEASE=1")
	}
	const version = "v0.0.0-releasetest"
	out := filepath.Join(t.TempDir(), "dist")
	var log bytes.Buffer
	start := time.Now()
	if err := run([]string{"-version", version, "-out", out}, &log); err != nil {
		t.Fatalf("release: %v\n%s", err, log.String())
	}
	t.Logf("release of %d targets in %.0fs:\n%s", len(Targets), time.Since(start).Seconds(), log.String())

	sums := readSums(t, filepath.Join(out, "SHA256SUMS"))
	var want []string
	for _, target := range Targets {
		base := archiveBase(version, target)
		name, exe := base+".tar.gz", "mqplan"
		if strings.HasPrefix(target, "windows/") {
			name, exe = base+".zip", "mqplan.exe"
		}
		want = append(want, name)
		t.Run(target, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(out, name))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			if got := sums[name]; got != hex.EncodeToString(sum[:]) {
				t.Errorf("SHA256SUMS has %q for %s, the file's is %x", got, name, sum)
			}
			files := unpack(t, name, data)
			var names []string
			for n := range files {
				names = append(names, n)
			}
			slices.Sort(names)
			wantNames := []string{base + "/CHANGELOG.md", base + "/LICENSE", base + "/LICENSE.uPlot", base + "/NOTICE", base + "/README.md", base + "/" + exe}
			slices.Sort(wantNames)
			if !slices.Equal(names, wantNames) {
				t.Errorf("%s holds %q, want %q", name, names, wantNames)
			}
			if !bytes.Contains(files[base+"/"+exe], []byte(version)) {
				t.Errorf("%s: the binary does not hold the version %s", name, version)
			}
			if target != hostTarget() {
				return
			}
			bin := filepath.Join(t.TempDir(), exe)
			if err := os.WriteFile(bin, files[base+"/"+exe], 0o755); err != nil {
				t.Fatal(err)
			}
			got, err := exec.Command(bin, "version").Output()
			if err != nil {
				t.Fatalf("%s version: %v", exe, err)
			}
			if !strings.HasPrefix(string(got), "mqplan "+version+" (") {
				t.Errorf("mqplan version printed %q, want the stamped %s", got, version)
			}
		})
	}
	var got []string
	for n := range sums {
		got = append(got, n)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("SHA256SUMS lists %q, want %q", got, want)
	}
}

// readSums reads a SHA256SUMS file: name to hex digest.
func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("SHA256SUMS line %q: want \"<sha256>  <name>\"", sc.Text())
		}
		sums[name] = sum
	}
	return sums
}

// unpack reads a tar.gz or zip archive: entry name to content (files only).
func unpack(t *testing.T, name string, data []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	if strings.HasSuffix(name, ".zip") {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			files[f.Name] = b
		}
		return files
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" {
			t.Errorf("%s: %s owned by %d:%d %q, want 0:0 and no name", name, h.Name, h.Uid, h.Gid, h.Uname)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = b
	}
	return files
}

// TestArchivesReproducible: packing the same files twice, with the files'
// own times changed in between, gives the same bytes, in both formats.
func TestArchivesReproducible(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "b.txt"), filepath.Join(dir, "a.txt")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("content of "+p), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	files := []entry{{"b", a, 0o755}, {"a", b, 0o644}}
	when := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		pack func(string, string, []entry, time.Time) error
	}{
		{"tar.gz", writeTarGz},
		{"zip", writeZip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [][]byte
			for i := range 2 {
				later := time.Now().Add(time.Duration(i) * time.Hour)
				for _, p := range []string{a, b} {
					if err := os.Chtimes(p, later, later); err != nil {
						t.Fatal(err)
					}
				}
				out := filepath.Join(t.TempDir(), "x."+tt.name)
				if err := tt.pack(out, "x", files, when); err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, data)
			}
			if !bytes.Equal(got[0], got[1]) {
				t.Errorf("two packs of the same files differ")
			}
			files := unpack(t, "x."+tt.name, got[0])
			if len(files) != 2 || !strings.HasSuffix(string(files["x/a"]), "a.txt") {
				t.Errorf("unpacked %v", files)
			}
		})
	}
}

// TestFlags: the release command refuses what would make a bad release
// before it builds anything.
func TestFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a version with a space", []string{"-version", "v1 beta", "-out", t.TempDir()}, `-version "v1 beta"`},
		{"a version with a quote", []string{"-version", `v1"`, "-out", t.TempDir()}, "use letters, digits"},
		{"an unknown target", []string{"-version", "v1", "-targets", "plan9/386", "-out", t.TempDir()}, `"plan9/386" is not one of`},
		{"an argument", []string{"v1"}, `unexpected argument "v1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(tt.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%q) = %v, want an error with %q", tt.args, err, tt.want)
			}
		})
	}
	t.Run("an output directory that is not empty", func(t *testing.T) {
		out := t.TempDir()
		if err := os.WriteFile(filepath.Join(out, "old.zip"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		err := run([]string{"-version", "v1", "-targets", "linux/amd64", "-out", out}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "is not empty") {
			t.Errorf("got %v, want the output directory refused", err)
		}
	})
}
