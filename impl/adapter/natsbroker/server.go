package natsbroker

import (
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// readyTimeout bounds waiting for the embedded server to accept clients.
const readyTimeout = 10 * time.Second

// Server is an embedded NATS server with JetStream, storing to a
// temporary directory, that can be stopped and started again over it.
type Server struct {
	mu   sync.Mutex
	srv  *server.Server
	opts server.Options
	dir  string
}

// StartServer starts an embedded server on a free loopback port.
func StartServer() (*Server, error) {
	dir, err := os.MkdirTemp("", "idemcheck-nats-")
	if err != nil {
		return nil, fmt.Errorf("nats: storage directory: %w", err)
	}
	s := &Server{dir: dir, opts: server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir,
		NoLog: true, NoSigs: true, MaxPayload: 1 << 20,
	}}
	if err := s.start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	// A restart must come back on the same port, or clients could not
	// reconnect to it.
	s.opts.Port = s.srv.Addr().(*net.TCPAddr).Port
	return s, nil
}

func (s *Server) start() error {
	opts := s.opts
	srv, err := server.NewServer(&opts)
	if err != nil {
		return fmt.Errorf("nats: embedded server: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(readyTimeout) {
		srv.Shutdown()
		return fmt.Errorf("nats: embedded server not ready after %s", readyTimeout)
	}
	s.srv = srv
	return nil
}

// URL is the client URL.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("nats://127.0.0.1:%d", s.opts.Port)
}

// Restart stops the server and starts it again over the same storage
// directory. Streams, consumers and their delivery state survive.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return fmt.Errorf("nats: server is stopped")
	}
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
	s.srv = nil
	return s.start()
}

// Running reports whether the server is up (it waits out a restart).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv != nil
}

// Stop shuts the server down and keeps its storage, as a broker that dies
// does; Close afterwards still removes the storage.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Close stops the server and removes its storage.
func (s *Server) Close() error {
	s.Stop()
	return os.RemoveAll(s.dir)
}
