// Package outfile writes the files named on mqplan's command line (the
// --json report, the --cpuprofile profile) without clobbering anything.
//
// A regular file (or a name that does not exist yet) is replaced
// atomically: the content goes to a temporary file in the same directory,
// which is renamed over the name once complete, so a reader sees the old
// file or the whole new one, never a torn one. A new file gets the
// process's umask, an existing one keeps its mode.
//
// Anything else is written through, never renamed over: a FIFO, a
// character device (/dev/null, /dev/full, a terminal) or a socket is
// opened for writing as a shell redirection would. A symbolic link is
// followed and what it points at is treated by the same rules, so the link
// stays a link. Standard output ("-") is the caller's business: the
// package does not know the process's writers.
package outfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// IsStdout reports whether path names standard output: "-", the
// convention of most tools, or /dev/stdout, which the caller should write
// through its own writer rather than by opening the device.
func IsStdout(path string) bool { return path == "-" || path == "/dev/stdout" }

// target is what path resolves to and how it is written.
type target struct {
	path    string      // the name to write (symbolic links resolved)
	exists  bool        // a regular file is there now
	mode    fs.FileMode // its permissions, kept when it is replaced
	through bool        // not a regular file: opened and written in place
}

// resolve decides how path is written. It follows symbolic links itself,
// so that a link is never renamed over; a dangling link is written
// through (opening it creates what it points at, as a redirection does).
func resolve(path string) (target, error) {
	for range 40 { // the kernel's own limit on a chain of links
		fi, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return target{path: path}, nil
		case err != nil:
			return target{}, unwrap(err)
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return target{}, unwrap(err)
			}
			if !filepath.IsAbs(link) {
				link = filepath.Join(filepath.Dir(path), link)
			}
			if _, err := os.Lstat(link); errors.Is(err, fs.ErrNotExist) {
				return target{path: path, through: true}, nil
			}
			path = link
		case fi.IsDir():
			return target{}, errors.New("is a directory")
		case fi.Mode().IsRegular():
			return target{path: path, exists: true, mode: fi.Mode().Perm()}, nil
		default:
			return target{path: path, through: true}, nil
		}
	}
	return target{}, errors.New("too many levels of symbolic links")
}

// Check reports whether path could be written, without writing it, so
// that a command can refuse a bad output name before it does any work:
// a missing directory, a directory, no permission. A FIFO is not opened
// (that would wait for its reader).
func Check(path string) error {
	t, err := resolve(path)
	if err != nil {
		return err
	}
	if t.through {
		if err := writable(t.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	// Replacing a file takes a new file in its directory: try one.
	f, err := createTemp(t.path, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// File is an output being written; Commit makes it visible, Abort
// discards it.
type File struct {
	f      *os.File
	t      target
	failed error // the first write error, reported again by Commit
}

// Create opens path for writing by the rules of the package comment.
// Nothing is visible at path until Commit, unless path is written through.
func Create(path string) (*File, error) {
	t, err := resolve(path)
	if err != nil {
		return nil, err
	}
	var f *os.File
	switch {
	case t.through:
		// O_TRUNC empties a file a dangling link creates; FIFOs and
		// devices ignore it.
		f, err = os.OpenFile(t.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	case t.exists:
		// Private until Commit gives it the old file's mode.
		f, err = createTemp(t.path, 0o600)
	default:
		// 0666 less the umask, as any new file the user's shell makes.
		f, err = createTemp(t.path, 0o666)
	}
	if err != nil {
		return nil, unwrap(err)
	}
	return &File{f: f, t: t}, nil
}

// createTemp creates a new file beside path (same directory, so that the
// rename cannot cross file systems), with perm less the umask.
func createTemp(path string, perm fs.FileMode) (*os.File, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	if fi, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("the directory %s does not exist", dir)
		}
		return nil, unwrap(err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	for {
		var r [6]byte
		_, _ = rand.Read(r[:])
		name := filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(r[:]))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, unwrap(err)
		}
		return f, nil
	}
}

// Write writes to the file; an error (no space left, a closed pipe) is
// kept and returned by Commit too.
func (o *File) Write(b []byte) (int, error) {
	n, err := o.f.Write(b)
	if err != nil && o.failed == nil {
		o.failed = fmt.Errorf("cannot write: %w", unwrap(err))
	}
	return n, err
}

// Commit finishes the file: a written-through file is closed; a
// replacement is synced, given its mode and renamed over the name. After
// an error the old file (if any) is untouched and no temporary remains.
func (o *File) Commit() error {
	if o.t.through {
		err := o.f.Close()
		if o.failed != nil {
			return o.failed
		}
		if err != nil {
			return fmt.Errorf("cannot write: %w", unwrap(err))
		}
		return nil
	}
	err := o.failed
	if err == nil {
		err = o.f.Sync()
	}
	if err == nil && o.t.exists {
		err = o.f.Chmod(o.t.mode)
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.f.Name(), o.t.path)
	}
	if err != nil {
		os.Remove(o.f.Name())
		if err == o.failed {
			return err
		}
		return fmt.Errorf("cannot write: %w", unwrap(err))
	}
	return nil
}

// Abort discards the file: a replacement's temporary is removed, the name
// keeps its old content. (A written-through file is only closed.)
func (o *File) Abort() {
	o.f.Close()
	if !o.t.through {
		os.Remove(o.f.Name())
	}
}

// WriteFile writes b to path by the package's rules.
func WriteFile(path string, b []byte) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Abort()
		return f.failed
	}
	return f.Commit()
}

// unwrap drops the *PathError wrapping (the caller names the file
// already, with the flag that gave it), keeping the operating system's
// reason: "no such file or directory", "no space left on device".
func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
