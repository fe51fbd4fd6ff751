package runner

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/plans"
)

// This file turns the plan's broker section into the client's targets:
// the TLS configuration of broker.tls, whose errors name the plan field
// and the file.

// newTargets parses the broker URLs; the TLS files of broker.tls are read
// once, when the first URL needs TLS, so that a missing or malformed file
// is one clear error before anything connects.
func newTargets(urls []string, b plans.Broker) ([]mqttc.Target, error) {
	return mqttc.NewTargets(urls, func() (*tls.Config, error) { return tlsConfig(b.TLS) })
}

// tlsConfig builds the client TLS configuration of broker.tls. Errors name
// the plan field and the file, in one line.
func tlsConfig(t *plans.TLS) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t == nil {
		return cfg, nil
	}
	cfg.ServerName = t.ServerName
	cfg.InsecureSkipVerify = t.InsecureSkipVerify
	if t.CA != "" {
		b, err := readPEM("broker.tls.ca", t.CA, "CERTIFICATE")
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("broker.tls.ca: %s holds no usable certificate", t.CA)
		}
		cfg.RootCAs = pool
	}
	if t.Cert != "" || t.Key != "" {
		cert, err := readPEM("broker.tls.cert", t.Cert, "CERTIFICATE")
		if err != nil {
			return nil, err
		}
		key, err := readPEM("broker.tls.key", t.Key, "PRIVATE KEY")
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("broker.tls.cert/key: %s and %s do not make a key pair: %v", t.Cert, t.Key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// readPEM reads a file that must hold a PEM block whose type ends in kind.
func readPEM(field, path, kind string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: cannot read %s: %v", field, path, err)
	}
	rest := b
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			return nil, fmt.Errorf("%s: %s is not a PEM file with a %s", field, path, kind)
		}
		if len(blk.Type) >= len(kind) && blk.Type[len(blk.Type)-len(kind):] == kind {
			return b, nil
		}
	}
}
