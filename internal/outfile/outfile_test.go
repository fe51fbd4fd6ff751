//go:build unix

package outfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// entries lists dir's names, to see that no temporary file is left.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFile(t *testing.T) {
	old := syscall.Umask(0o027)
	t.Cleanup(func() { syscall.Umask(old) })

	tests := []struct {
		name string
		// setup prepares dir and returns the path to write.
		setup func(t *testing.T, dir string) string
		// check verifies the outcome.
		check func(t *testing.T, dir, path string)
	}{
		{
			name:  "a new file gets 0666 less the umask",
			setup: func(t *testing.T, dir string) string { return filepath.Join(dir, "out.json") },
			check: func(t *testing.T, dir, path string) {
				fi, err := os.Stat(path)
				if err != nil || fi.Mode() != 0o640 {
					t.Errorf("mode %v (%v), want -rw-r-----", fi.Mode(), err)
				}
			},
		},
		{
			name: "an existing file keeps its mode and is replaced",
			setup: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "out.json")
				if err := os.WriteFile(p, []byte("old, longer than the new content"), 0o604); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(p, 0o604); err != nil {
					t.Fatal(err)
				}
				return p
			},
			check: func(t *testing.T, dir, path string) {
				fi, err := os.Stat(path)
				if err != nil || fi.Mode() != 0o604 {
					t.Errorf("mode %v (%v), want -rw----r--", fi.Mode(), err)
				}
			},
		},
		{
			name: "a symbolic link stays a link; its target gets the content",
			setup: func(t *testing.T, dir string) string {
				if err := os.WriteFile(filepath.Join(dir, "real.json"), []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(dir, "link.json")
				if err := os.Symlink("real.json", p); err != nil {
					t.Fatal(err)
				}
				return p
			},
			check: func(t *testing.T, dir, path string) {
				fi, err := os.Lstat(path)
				if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					t.Fatalf("link.json is no longer a link: %v %v", fi.Mode(), err)
				}
				if b, _ := os.ReadFile(filepath.Join(dir, "real.json")); string(b) != "new content" {
					t.Errorf("the target holds %q", b)
				}
			},
		},
		{
			name: "a dangling link is written through, creating its target",
			setup: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "link.json")
				if err := os.Symlink("made.json", p); err != nil {
					t.Fatal(err)
				}
				return p
			},
			check: func(t *testing.T, dir, path string) {
				if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					t.Fatalf("link.json is no longer a link: %v", err)
				}
				if b, _ := os.ReadFile(filepath.Join(dir, "made.json")); string(b) != "new content" {
					t.Errorf("the target holds %q", b)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tt.setup(t, dir)
			before := len(entries(t, dir))
			if err := Check(path); err != nil {
				t.Fatalf("Check: %v", err)
			}
			if err := WriteFile(path, []byte("new content")); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(path); err != nil || string(b) != "new content" {
				t.Errorf("read back %q, %v", b, err)
			}
			if n := len(entries(t, dir)); n != max(before, 1) && !strings.Contains(tt.name, "dangling") {
				t.Errorf("dir holds %v: a temporary file was left", entries(t, dir))
			}
			tt.check(t, dir, path)
		})
	}
}

// TestNotRegularFiles writes to a FIFO and a character device: neither is
// replaced by a regular file, and the device's write error is reported.
func TestNotRegularFiles(t *testing.T) {
	t.Run("a FIFO is written through", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "fifo")
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Skip("mkfifo:", err)
		}
		if err := Check(p); err != nil {
			t.Fatalf("Check: %v", err)
		}
		got := make(chan []byte, 1)
		go func() {
			f, err := os.Open(p)
			if err != nil {
				got <- nil
				return
			}
			defer f.Close()
			b, _ := io.ReadAll(f)
			got <- b
		}()
		if err := WriteFile(p, []byte("through the pipe")); err != nil {
			t.Fatal(err)
		}
		select {
		case b := <-got:
			if string(b) != "through the pipe" {
				t.Errorf("the reader got %q", b)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the reader got nothing in 10s")
		}
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("the FIFO was replaced: %v %v", fi.Mode(), err)
		}
	})
	t.Run("/dev/null is written through, not replaced", func(t *testing.T) {
		before, err := os.Lstat("/dev/null")
		if err != nil {
			t.Skip(err)
		}
		if err := WriteFile("/dev/null", []byte("x")); err != nil {
			t.Fatal(err)
		}
		after, err := os.Lstat("/dev/null")
		if err != nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
			t.Errorf("/dev/null changed: %v -> %v (%v)", before.Mode(), after.Mode(), err)
		}
	})
	t.Run("/dev/full reports no space, and stays a device", func(t *testing.T) {
		if _, err := os.Lstat("/dev/full"); err != nil {
			t.Skip(err)
		}
		err := WriteFile("/dev/full", bytes.Repeat([]byte("x"), 100))
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "no space left on device") {
			t.Errorf("error %v, want no space left on device", err)
		}
		if fi, err := os.Lstat("/dev/full"); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
			t.Errorf("/dev/full is no longer a character device: %v %v", fi.Mode(), err)
		}
	})
}

func TestCheckRefuses(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"a missing directory", filepath.Join(dir, "no", "out.json"), "does not exist"},
		{"a directory", dir, "is a directory"},
		{"a file as directory", filepath.Join(dir, "file", "out.json"), "not a directory"},
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, struct{ name, path, want string }{"a directory without write permission", filepath.Join(ro, "out.json"), "permission denied"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check(%s) = %v, want %q", tt.path, err, tt.want)
			}
			if _, err := Create(tt.path); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Create(%s) = %v, want %q", tt.path, err, tt.want)
			}
		})
	}
	if names := entries(t, dir); len(names) > 2 {
		t.Errorf("left behind: %v", names)
	}
}

// TestAbortKeepsTheOldFile: a failed run leaves the previous report whole.
func TestAbortKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("half")); err != nil {
		t.Fatal(err)
	}
	f.Abort()
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("out.json holds %q", b)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("left behind: %v", names)
	}
}
