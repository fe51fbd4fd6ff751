package runner

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mqplan/mqplan/plans"
)

// target is one broker address and how to reach it: plain TCP, TLS,
// WebSocket or WebSocket over TLS.
type target struct {
	url  string
	addr string      // host:port of the TCP connection
	tls  *tls.Config // nil for mqtt:// and ws://
	ws   string      // the WebSocket URL for ws:// and wss://, else ""
}

// newTargets parses the broker URLs and loads the TLS files once, so that
// a missing or malformed file is one clear error before anything connects.
func newTargets(urls []string, b plans.Broker) ([]target, error) {
	var cfg *tls.Config
	out := make([]target, len(urls))
	for i, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("broker url %q: %w", raw, err)
		}
		host, port := u.Hostname(), u.Port()
		if host == "" {
			return nil, fmt.Errorf("broker url %q has no host", raw)
		}
		t := target{url: raw}
		secure := false
		switch u.Scheme {
		case "mqtt", "tcp":
			port = defaultPort(port, "1883")
		case "mqtts", "ssl", "tls":
			port, secure = defaultPort(port, "8883"), true
		case "ws":
			port = defaultPort(port, "80")
		case "wss":
			port, secure = defaultPort(port, "443"), true
		default:
			return nil, fmt.Errorf("broker url %q: unknown scheme %q (use mqtt, mqtts, ws or wss)", raw, u.Scheme)
		}
		t.addr = net.JoinHostPort(host, port)
		if u.Scheme == "ws" || u.Scheme == "wss" {
			path := u.EscapedPath()
			if path == "" {
				path = "/mqtt"
			}
			t.ws = (&url.URL{Scheme: u.Scheme, Host: t.addr, Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}).String()
			if u.Path == "" {
				t.ws += path
			}
		}
		if secure {
			if cfg == nil {
				if cfg, err = tlsConfig(b.TLS); err != nil {
					return nil, err
				}
			}
			c := cfg.Clone()
			if c.ServerName == "" {
				c.ServerName = host
			}
			t.tls = c
		}
		out[i] = t
	}
	return out, nil
}

func defaultPort(p, def string) string {
	if p == "" {
		return def
	}
	return p
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

// dialTransport opens the byte stream an MQTT connection runs over.
func dialTransport(ctx context.Context, t target, source string) (net.Conn, error) {
	d := &net.Dialer{}
	if source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
	}
	if t.ws != "" {
		return dialWebSocket(ctx, t, d)
	}
	nc, err := d.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return nil, err
	}
	if t.tls == nil {
		return nc, nil
	}
	tc := tls.Client(nc, t.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("TLS handshake: %w", tlsReason(err))
	}
	return tc, nil
}

// tlsReason shortens the usual TLS failures to their cause.
func tlsReason(err error) error {
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	var ce x509.CertificateInvalidError
	switch {
	case errors.As(err, &ue):
		return errors.New("the broker's certificate is signed by an unknown authority (set broker.tls.ca)")
	case errors.As(err, &he):
		return fmt.Errorf("the broker's certificate is not valid for %s (set broker.tls.server_name)", he.Host)
	case errors.As(err, &ce):
		return fmt.Errorf("the broker's certificate is invalid: %v", ce)
	}
	return err
}

// dialWebSocket opens a WebSocket with the "mqtt" subprotocol.
func dialWebSocket(ctx context.Context, t target, d *net.Dialer) (net.Conn, error) {
	wd := websocket.Dialer{
		NetDialContext:   d.DialContext,
		TLSClientConfig:  t.tls,
		Subprotocols:     []string{"mqtt"},
		HandshakeTimeout: 0, // bounded by ctx
		ReadBufferSize:   readBufferSize,
		WriteBufferSize:  readBufferSize,
	}
	ws, resp, err := wd.DialContext(ctx, t.ws, nil)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("WebSocket handshake with %s: HTTP %d %s", t.ws, resp.StatusCode, http.StatusText(resp.StatusCode))
		}
		return nil, fmt.Errorf("WebSocket: %w", tlsReason(err))
	}
	return &wsConn{ws: ws}, nil
}

// wsConn is a WebSocket seen as a byte stream: every Write is one binary
// frame (mqplan writes one MQTT packet a Write), and reads run across
// frames, since MQTT packets need not align with them.
type wsConn struct {
	ws *websocket.Conn
	r  io.Reader
	// writeDeadline is the deadline for writes (Unix ns, 0 for none).
	// gorilla's own SetWriteDeadline must not run beside a write, yet a
	// deadline is exactly what releases a write stuck on a stalled broker;
	// so SetWriteDeadline stores it here and sets it on the underlying
	// connection (safe at any time), and Write, which mqttConn serialises,
	// hands it to gorilla before each message.
	writeDeadline atomic.Int64
}

func (c *wsConn) Read(p []byte) (int, error) {
	for {
		if c.r == nil {
			typ, r, err := c.ws.NextReader()
			if err != nil {
				return 0, err
			}
			if typ != websocket.BinaryMessage {
				continue
			}
			c.r = r
		}
		n, err := c.r.Read(p)
		if errors.Is(err, io.EOF) {
			c.r = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (c *wsConn) Write(p []byte) (int, error) {
	var dl time.Time
	if ns := c.writeDeadline.Load(); ns != 0 {
		dl = time.Unix(0, ns)
	}
	if err := c.ws.SetWriteDeadline(dl); err != nil {
		return 0, err
	}
	if err := c.ws.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *wsConn) Close() error                      { return c.ws.Close() }
func (c *wsConn) LocalAddr() net.Addr               { return c.ws.LocalAddr() }
func (c *wsConn) RemoteAddr() net.Addr              { return c.ws.RemoteAddr() }
func (c *wsConn) SetReadDeadline(t time.Time) error { return c.ws.SetReadDeadline(t) }
func (c *wsConn) SetWriteDeadline(t time.Time) error {
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	c.writeDeadline.Store(ns)
	return c.ws.UnderlyingConn().SetWriteDeadline(t)
}
func (c *wsConn) SetDeadline(t time.Time) error {
	if err := c.ws.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}
