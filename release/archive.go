package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"
)

// entry is one file of an archive: its name under the archive's
// directory, where it is read from, and its mode.
type entry struct {
	name string
	path string
	mode int64
}

// writeTarGz writes files under dir/ into a gzip'd tar at name, with
// nothing of this machine in it (owner 0:0, no user names, mtime fixed,
// entries sorted, no gzip name or time), so that it is reproducible.
func writeTarGz(name, dir string, files []entry, mtime time.Time) (err error) {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	gz, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	dirHdr := &tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(dirHdr); err != nil {
		return err
	}
	for _, e := range sorted(files) {
		b, err := os.ReadFile(e.path)
		if err != nil {
			return err
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: path.Join(dir, e.name), Mode: e.mode, Size: int64(len(b)), ModTime: mtime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// writeZip writes files under dir/ into a zip at name, reproducibly
// (entries sorted, times fixed, no extra fields).
func writeZip(name, dir string, files []entry, mtime time.Time) (err error) {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	zw := zip.NewWriter(f)
	for _, e := range sorted(files) {
		b, err := os.ReadFile(e.path)
		if err != nil {
			return err
		}
		h := &zip.FileHeader{Name: path.Join(dir, e.name), Method: zip.Deflate, Modified: mtime}
		h.SetMode(os.FileMode(e.mode))
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return zw.Close()
}

func sorted(files []entry) []entry {
	s := append([]entry(nil), files...)
	sort.Slice(s, func(i, j int) bool { return s[i].name < s[j].name })
	return s
}

// checksums is SHA256SUMS for the named files of dir, in the format
// `sha256sum -c` (and `shasum -a 256 -c`) verify: hex, two spaces, name.
func checksums(dir string, names []string) ([]byte, error) {
	var out []byte
	for _, n := range names {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = fmt.Appendf(out, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), n)
	}
	return out, nil
}
