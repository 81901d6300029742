package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/lockbench/lockbench/internal/handshake"
)

// Path is where the metrics are served.
const Path = "/metrics"

// HandshakeTimeout bounds the time a connection may take to send a
// request's headers, the HTTP server's handshake (http.Server's
// ReadHeaderTimeout; a connection that has not sent its first request's
// by then is closed): handshake.Timeout, 5 seconds. A keep-alive
// connection idle between scrapes has no bound.
const HandshakeTimeout = handshake.Timeout

// MaxPending bounds the connections the server holds before their first
// request's headers are read: handshake.MaxPending, 512. Beyond it the
// oldest is closed to make room, so that silent connections never keep
// a scraper out.
const MaxPending = handshake.MaxPending

// shutdownTimeout bounds Close's wait for a scrape in progress: 2s.
const shutdownTimeout = 2 * time.Second

// Server serves an Exporter over HTTP at Path.
type Server struct {
	srv       *http.Server
	ln        net.Listener
	done      chan error
	closeOnce sync.Once
	closeErr  error
}

// Listen serves e at addr, HOST:PORT. An empty host is loopback
// (127.0.0.1), not every interface: the metrics name the servers' load
// and nothing outside the machine should see them unless asked for with
// a host (0.0.0.0 for all). Port 0 picks a free port (Addr tells which).
func Listen(addr string, e *Exporter) (*Server, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	raw, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	ln := handshake.NewListener(raw, HandshakeTimeout, MaxPending)
	mux := http.NewServeMux()
	mux.Handle(Path, e.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "lockbench live metrics: %s\n", Path)
	})
	s := &Server{
		srv: &http.Server{
			Handler:           handshakeDone(mux),
			ReadHeaderTimeout: HandshakeTimeout,
			ConnContext: func(ctx context.Context, c net.Conn) context.Context {
				return context.WithValue(ctx, connKey{}, c)
			},
		},
		ln:   ln,
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the metrics' URL.
func (s *Server) URL() string { return "http://" + s.Addr() + Path }

// Close stops the server, letting a scrape in progress finish (for up to
// shutdownTimeout). Later calls return the first one's error.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		err := s.srv.Shutdown(ctx)
		if serveErr := <-s.done; !errors.Is(serveErr, http.ErrServerClosed) {
			err = errors.Join(err, serveErr)
		}
		if err != nil {
			s.closeErr = fmt.Errorf("metrics: %w", err)
		}
	})
	return s.closeErr
}

// connKey is the request context's key to its connection.
type connKey struct{}

// handshakeDone marks a connection's handshake complete when the first
// request's headers have been read: h is called only then.
func handshakeDone(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
			handshake.Done(c)
		}
		h.ServeHTTP(w, r)
	})
}
