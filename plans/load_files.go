package plans

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// maxPEMBytes bounds a TLS file read at load time. A CA bundle is a few
// hundred kilobytes at most; the bound keeps a wrong path (/dev/zero, a
// disk image) from being read whole.
const maxPEMBytes = 4 << 20

// checkTLSFiles reads broker.tls's ca, cert and key and reports, at each
// key, a file that is missing, unreadable or not what it should be (PEM
// certificates for ca and cert, a PEM private key for key, and a cert and
// key that make a pair). Only the plan's own files are read, once, at
// load time; a file that is not a regular file (a pipe such as
// <(...), /dev/fd/N) is only checked to exist, since reading it here would
// leave nothing for the run.
func (l *loader) checkTLSFiles(s *keySection, t *TLS) {
	read := func(key, path string) ([]byte, bool) {
		if path == "" {
			return nil, false
		}
		e, _ := s.get(key)
		b, err := readSmallFile(path)
		if err != nil {
			l.errorf(e.val, e.path, "cannot read %s: %v", path, err)
			return nil, false
		}
		return b, b != nil
	}
	if b, ok := read("ca", t.CA); ok {
		if !x509.NewCertPool().AppendCertsFromPEM(b) {
			e, _ := s.get("ca")
			l.errorf(e.val, e.path, "%s holds no PEM certificate (-----BEGIN CERTIFICATE-----)", t.CA)
		}
	}
	cert, certOK := read("cert", t.Cert)
	key, keyOK := read("key", t.Key)
	if certOK && !hasPEMBlock(cert, func(typ string) bool { return typ == "CERTIFICATE" }) {
		e, _ := s.get("cert")
		l.errorf(e.val, e.path, "%s holds no PEM certificate (-----BEGIN CERTIFICATE-----)", t.Cert)
		certOK = false
	}
	if keyOK && !hasPEMBlock(key, func(typ string) bool { return strings.HasSuffix(typ, "PRIVATE KEY") }) {
		e, _ := s.get("key")
		l.errorf(e.val, e.path, "%s holds no PEM private key (-----BEGIN ... PRIVATE KEY-----)", t.Key)
		keyOK = false
	}
	if certOK && keyOK {
		if _, err := tls.X509KeyPair(cert, key); err != nil {
			e, _ := s.get("key")
			l.errorf(e.val, e.path, "%s and %s do not make a key pair: %v", t.Cert, t.Key, err)
		}
	}
}

// hasPEMBlock reports whether b holds a PEM block of a type that ok accepts.
func hasPEMBlock(b []byte, ok func(typ string) bool) bool {
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return false
		}
		if ok(blk.Type) {
			return true
		}
	}
}

// readSmallFile reads a regular file of at most maxPEMBytes. For a file
// that exists but is not regular (a pipe, a device) it returns nil, nil:
// it is left to the run. The error is the system's reason alone ("no
// such file or directory"), the caller naming the file.
func readSmallFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, reason(err)
	}
	if fi.IsDir() {
		return nil, errors.New("is a directory")
	}
	if !fi.Mode().IsRegular() {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, reason(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPEMBytes+1))
	if err != nil {
		return nil, reason(err)
	}
	if len(b) > maxPEMBytes {
		return nil, fmt.Errorf("larger than %d MiB, which no PEM file is", maxPEMBytes>>20)
	}
	return b, nil
}

// reason drops the *PathError around err, keeping the system's reason.
func reason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
