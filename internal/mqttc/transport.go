package mqttc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mqplan/mqplan/internal/brokerurl"
)

// This file is the transports: the byte stream a connection runs over,
// plain TCP, TLS, WebSocket or WebSocket over TLS.

// Target is one broker address and how to reach it.
type Target struct {
	// URL is the broker URL as given, for messages.
	URL  string
	addr string      // host:port of the TCP connection
	tls  *tls.Config // nil for mqtt:// and ws://
	ws   string      // the WebSocket URL for ws:// and wss://, else ""
}

// NewTargets parses the broker URLs. tlsConfig is called once, the first
// time a URL needs TLS, so that TLS files are read only when used and a
// missing or malformed one is one clear error before anything connects;
// each TLS target gets its own copy, whose ServerName defaults to the
// URL's host.
func NewTargets(urls []string, tlsConfig func() (*tls.Config, error)) ([]Target, error) {
	var cfg *tls.Config
	out := make([]Target, len(urls))
	for i, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("broker url %q: %w", raw, err)
		}
		host, port := u.Hostname(), u.Port()
		if host == "" {
			return nil, fmt.Errorf("broker url %q has no host", raw)
		}
		t := Target{URL: raw}
		sc, ok := brokerurl.Lookup(u.Scheme)
		if !ok {
			return nil, fmt.Errorf("broker url %q: unknown scheme %q (use %s)", raw, u.Scheme, brokerurl.CanonicalNames())
		}
		if port == "" {
			port = sc.DefaultPort
		}
		t.addr = net.JoinHostPort(host, port)
		if sc.WebSocket {
			t.ws = (&url.URL{Scheme: u.Scheme, Host: t.addr, Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}).String()
			if u.Path == "" {
				t.ws += brokerurl.DefaultWebSocketPath
			}
		}
		if sc.TLS {
			if cfg == nil {
				if cfg, err = tlsConfig(); err != nil {
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

// dialTransport opens the byte stream an MQTT connection runs over, from
// the local address source when it is not "".
func dialTransport(ctx context.Context, t Target, source string) (net.Conn, error) {
	d := &net.Dialer{}
	if source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
		d.Control = bindNoPort
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

// tlsReason shortens the usual TLS failures to their cause, with the plan
// setting that fixes it.
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
func dialWebSocket(ctx context.Context, t Target, d *net.Dialer) (net.Conn, error) {
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
	// connection (safe at any time), and Write, which Conn serialises,
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
