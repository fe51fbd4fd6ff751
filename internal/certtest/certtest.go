// Package certtest makes throwaway certificates for TLS tests: a CA, a
// server certificate for 127.0.0.1 and localhost, and a client
// certificate, written as PEM files into a test's temporary directory.
// Nothing is committed: keys exist only for the test that made them.
package certtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Files are the PEM files of one set of test certificates.
type Files struct {
	Dir                    string
	CA                     string // the CA certificate
	ServerCert, ServerKey  string // for 127.0.0.1, ::1 and localhost
	ClientCert, ClientKey  string // signed by the same CA
	OtherCA                string // a CA that signed nothing here
	caCert                 *x509.Certificate
	serverPair, clientPair tls.Certificate
}

// Generate writes a fresh set of certificates into t.TempDir().
func Generate(t testing.TB) *Files {
	t.Helper()
	dir := t.TempDir()
	f := &Files{Dir: dir}
	caKey, caCert, caDER := selfSigned(t, "mqplan test CA")
	f.caCert = caCert
	f.CA = write(t, dir, "ca.pem", "CERTIFICATE", caDER)
	_, _, otherDER := selfSigned(t, "mqplan unrelated CA")
	f.OtherCA = write(t, dir, "other-ca.pem", "CERTIFICATE", otherDER)

	leaf := func(name string, server bool) (certPath, keyPath string, pair tls.Certificate) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(t),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if server {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
			tmpl.DNSNames = []string{"localhost"}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		certPath = write(t, dir, name+".pem", "CERTIFICATE", der)
		keyPath = write(t, dir, name+".key", "PRIVATE KEY", kb)
		pair, err = tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			t.Fatal(err)
		}
		return certPath, keyPath, pair
	}
	f.ServerCert, f.ServerKey, f.serverPair = leaf("server", true)
	f.ClientCert, f.ClientKey, f.clientPair = leaf("client", false)
	return f
}

// ServerConfig is a broker's TLS configuration; mutual requires clients to
// present a certificate signed by the CA.
func (f *Files) ServerConfig(mutual bool) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{f.serverPair}, MinVersion: tls.VersionTLS12}
	if mutual {
		pool := x509.NewCertPool()
		pool.AddCert(f.caCert)
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg
}

func selfSigned(t testing.TB, name string) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, der
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func write(t testing.TB, dir, name, typ string, der []byte) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
