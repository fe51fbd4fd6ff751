package runner

import (
	"context"
	"fmt"

	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/certtest"
	"github.com/mqplan/mqplan/internal/loopback"
	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/plans"
)

func TestTransports(t *testing.T) {
	t.Parallel()
	certs := certtest.Generate(t)
	notPEM := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()

	type brokerKind int
	const (
		plain brokerKind = iota
		withTLS
		mutualTLS
		webSocket
		webSocketTLS
		withUsers
	)
	tests := []struct {
		name    string
		broker  brokerKind
		url     func(b *broker.Broker) string
		tls     *plans.TLS
		source  string
		user    string
		pass    string
		runErr  string // Run refuses to start with this
		connErr string // every client fails to connect with this
	}{
		{name: "mqtts with the CA", broker: withTLS, url: (*broker.Broker).URL, tls: &plans.TLS{CA: certs.CA}},
		{name: "mutual TLS", broker: mutualTLS, url: (*broker.Broker).URL, tls: &plans.TLS{CA: certs.CA, Cert: certs.ClientCert, Key: certs.ClientKey}},
		{name: "ws", broker: webSocket, url: (*broker.Broker).WebSocketURL},
		{name: "wss with the CA", broker: webSocketTLS, url: (*broker.Broker).WebSocketURL, tls: &plans.TLS{CA: certs.CA}},
		{name: "source address 127.0.0.2", broker: plain, url: (*broker.Broker).URL, source: "127.0.0.2"},
		{name: "user and password", broker: withUsers, url: (*broker.Broker).URL, user: "alice", pass: "s3cret"},
		{name: "unknown authority", broker: withTLS, url: (*broker.Broker).URL, tls: &plans.TLS{CA: certs.OtherCA},
			connErr: "signed by an unknown authority"},
		{name: "no client certificate for mutual TLS", broker: mutualTLS, url: (*broker.Broker).URL, tls: &plans.TLS{CA: certs.CA},
			connErr: "certificate"},
		{name: "missing CA file", broker: withTLS, url: (*broker.Broker).URL, tls: &plans.TLS{CA: filepath.Join(certs.Dir, "nope.pem")},
			runErr: "broker.tls.ca: cannot read " + filepath.Join(certs.Dir, "nope.pem") + ": no such file or directory"},
		{name: "CA file not PEM", broker: withTLS, url: (*broker.Broker).URL, tls: &plans.TLS{CA: notPEM},
			runErr: "broker.tls.ca: " + notPEM + " is not a PEM file with a CERTIFICATE"},
		{name: "wrong password", broker: withUsers, url: (*broker.Broker).URL, user: "alice", pass: "wrong",
			connErr: "CONNACK refused: bad user name or password"},
		{name: "WebSocket path that 404s", broker: plain, url: func(*broker.Broker) string { return "ws" + strings.TrimPrefix(notFound.URL, "http") + "/mqtt" },
			connErr: "HTTP 404 Not Found"},
		{name: "source address not on this machine", broker: plain, url: (*broker.Broker).URL, source: "192.0.2.1",
			connErr: "cannot assign requested address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bo broker.Options
			switch tt.broker {
			case withTLS:
				bo.TLS = certs.ServerConfig(false)
			case mutualTLS:
				bo.TLS = certs.ServerConfig(true)
			case webSocket:
				bo.WebSocket = loopback.FreeAddr(t)
			case webSocketTLS:
				bo.WebSocket, bo.TLS = loopback.FreeAddr(t), certs.ServerConfig(false)
			case withUsers:
				bo.Users = map[string]string{"alice": "s3cret"}
			}
			b, err := broker.Start(bo)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close(5 * time.Second)
			p := e2ePlan(2, 1, 500*time.Millisecond)
			p.Broker.TLS = tt.tls
			p.Broker.ConnectTimeout = 3 * time.Second
			if tt.source != "" {
				p.Broker.SourceAddresses = []string{tt.source}
			}
			for i := range p.Groups {
				if tt.user != "" {
					p.Groups[i].Username = plans.MustTemplate(tt.user)
					p.Groups[i].Password = plans.Secret(tt.pass)
				}
			}
			prog := compile(t, p)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, err := Run(ctx, prog, Options{BrokerURL: tt.url(b)})
			if tt.runErr != "" {
				if err == nil || err.Error() != tt.runErr {
					t.Fatalf("Run error %v, want %q", err, tt.runErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := all(st)
			if tt.connErr != "" {
				if st.Incomplete == "" || m.ConnectFailed != 2 || len(st.ErrorSamples) == 0 || !strings.Contains(st.ErrorSamples[0], tt.connErr) {
					t.Fatalf("incomplete %q, connect.failed %d, errors %v; want every connect to fail with %q", st.Incomplete, m.ConnectFailed, st.ErrorSamples, tt.connErr)
				}
				if strings.Count(st.ErrorSamples[0], ": ") > 4 {
					t.Errorf("error is a stack of wrapped messages: %s", st.ErrorSamples[0])
				}
				return
			}
			if st.Incomplete != "" || m.Sent == 0 || m.Received != m.Sent || m.Lost != 0 || m.ConnectFailed != 0 {
				t.Fatalf("incomplete %q sent %d received %d lost %d connect.failed %d errors %v", st.Incomplete, m.Sent, m.Received, m.Lost, m.ConnectFailed, st.ErrorSamples)
			}
		})
	}
}

// TestMosquittoTransports runs the plan against Mosquitto over TLS,
// mutual TLS, WebSocket and WebSocket over TLS (with and without a client
// certificate), on every protocol version: every message once.
func TestMosquittoTransports(t *testing.T) {
	t.Parallel()
	if mosquittotest.Binary() == "" && os.Getenv("CI") == "" {
		t.Skip("mosquitto is not installed (apt-get install mosquitto); skipping the Mosquitto transport tests")
	}
	certs := certtest.Generate(t)
	for _, mutual := range []bool{false, true} {
		urls := mosquittotest.StartWith(t, mosquittotest.Options{
			CA: certs.CA, Cert: certs.ServerCert, Key: certs.ServerKey, RequireCert: mutual, WebSocket: true,
		})
		transports := []struct {
			name string
			url  string
			tls  bool
		}{
			{"tls", urls.MQTTS, true},
			{"ws", urls.WS, false},
			{"wss", urls.WSS, true},
		}
		for _, tr := range transports {
			if mutual && !tr.tls {
				continue
			}
			for _, proto := range []int{3, 4, 5} {
				t.Run(fmt.Sprintf("%s/mutual=%v/v%d", tr.name, mutual, proto), func(t *testing.T) {
					p := e2ePlan(2, 1, 500*time.Millisecond)
					for i := range p.Groups {
						p.Groups[i].Protocol = proto
						p.Groups[i].ClientID = plans.MustTemplate(p.Groups[i].Name + "-%i")
					}
					if tr.tls {
						p.Broker.TLS = &plans.TLS{CA: certs.CA}
						if mutual {
							p.Broker.TLS.Cert, p.Broker.TLS.Key = certs.ClientCert, certs.ClientKey
						}
					}
					prog := compile(t, p)
					st, m := runAt(t, prog, tr.url)
					want := planned(prog)
					if st.Incomplete != "" || m.Sent != want || m.Received != want || m.Lost != 0 || m.Duplicates != 0 || m.ConnectFailed != 0 {
						t.Fatalf("incomplete %q sent %d received %d lost %d dup %d connect.failed %d (want %d) errors %v",
							st.Incomplete, m.Sent, m.Received, m.Lost, m.Duplicates, m.ConnectFailed, want, st.ErrorSamples)
					}
				})
			}
		}
	}
}

// TestProtocolRefused: a broker that refuses the plan's protocol version
// gives one clear line per client, and the run is incomplete (exit 3).
func TestProtocolRefused(t *testing.T) {
	for _, proto := range []int{3, 4} {
		t.Run(fmt.Sprintf("v%d", proto), func(t *testing.T) {
			b, err := broker.Start(broker.Options{MinimumProtocol: 5})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close(5 * time.Second)
			p := e2ePlan(2, 1, 500*time.Millisecond)
			for i := range p.Groups {
				p.Groups[i].Protocol = proto
				p.Groups[i].ClientID = plans.MustTemplate(p.Groups[i].Name + "-%i")
			}
			st, err := Run(context.Background(), compile(t, p), Options{BrokerURL: b.URL()})
			if err != nil {
				t.Fatal(err)
			}
			m := all(st)
			if st.Incomplete == "" || m.ConnectFailed != 2 || len(st.ErrorSamples) == 0 ||
				!strings.Contains(st.ErrorSamples[0], "CONNACK refused: unacceptable protocol version") {
				t.Fatalf("incomplete %q, connect.failed %d, errors %v", st.Incomplete, m.ConnectFailed, st.ErrorSamples)
			}
		})
	}
}
