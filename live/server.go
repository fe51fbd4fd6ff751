package live

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// maxAddr bounds the --metrics-listen address: a host name and a port.
const maxAddr = 300

// Server is the /metrics endpoint of a run: started before the run, so
// that a port in use is an error before anything connects, and closed
// after the report.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// ListenAddr is addr as the endpoint listens on it: a bare ":PORT" (or an
// empty host) means the loopback address 127.0.0.1, so that the metrics
// stay on this machine unless the user names another host.
func ListenAddr(addr string) (string, error) {
	if len(addr) > maxAddr {
		return "", fmt.Errorf("address of %d bytes, at most %d", len(addr), maxAddr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%q is not HOST:PORT (for example 127.0.0.1:9464 or :9464): %w", addr, err)
	}
	if port == "" {
		return "", fmt.Errorf("%q has no port (for example :9464)", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Listen binds addr (see ListenAddr) and serves h on /metrics until
// Close. Only the bind is synchronous: a port in use or a host that is
// not this machine's is its error.
func Listen(addr string, h http.Handler) (*Server, error) {
	a, err := ListenAddr(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", a)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", a, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	s := &Server{
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       10 * time.Second,
			WriteTimeout:      10 * time.Second,
			IdleTimeout:       time.Minute,
			MaxHeaderBytes:    16 << 10,
		},
		ln:   ln,
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the endpoint listens on (the real port when the
// one asked for was 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the endpoint's address as a scraper names it.
func (s *Server) URL() string { return "http://" + s.Addr() + "/metrics" }

// Loopback says whether only this machine can reach the endpoint: false
// for a wildcard (0.0.0.0, [::]) or another interface's address, which
// the command says on stderr.
func (s *Server) Loopback() bool {
	ta, ok := s.ln.Addr().(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// Close stops the endpoint, letting a scrape in progress finish for at
// most a few seconds.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("stop metrics endpoint %s: %w", s.Addr(), err)
	}
	return nil
}
