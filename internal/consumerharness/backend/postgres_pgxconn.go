package backend

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// A pgx consumer's workers get a *pgxpool.Pool each, made in the
// scenario's testing/synctest bubble and closed there, as pgx requires:
// a pool's WaitGroup, timers and channels, and a connection's context
// watcher, belong to the bubble they were made in and stop the program
// when used from another. What costs is not the pool but its
// connections: a server process started, a startup and authentication,
// for every worker of every scenario. So the run keeps the sessions
// instead, below pgx: each pool dials through pgxDial, which hands it a
// session of the run's, connected once outside every bubble, its network
// connection taken over from pgconn (Hijack), and answers pgx's startup
// message itself with what the server said when the session began
// (authentication done, the parameters, the key a cancel request needs).
// pgx's Terminate never reaches the server; when pgx closes the
// connection, the session is rolled back and reset as a new session's
// (putScript, and DEALLOCATE ALL: the next pgx connection prepares its
// statements again, under the same names) and kept for the next pool.
// Any reply the reset does not expect closes the session, and the server
// rolls it back itself: so does a connection closed while a reply was
// coming (Kill closes a busy one), whose stream pgx's reader may have
// left within a message.

// rawConn is a session of the run's, idle between two pgx connections.
type rawConn struct {
	conn net.Conn
	// hello is the server's reply to a startup message, as the session
	// got it: AuthenticationOk, ParameterStatus, BackendKeyData and
	// ReadyForQuery.
	hello []byte
}

// terminate is pgx's Terminate message, which it sends on closing.
var terminate = []byte{'X', 0, 0, 0, 4}

// Startup request codes: SSL and GSS encryption requests, which a
// session already connected answers with 'N' (not here).
const (
	sslRequestCode    = 80877103
	gssEncRequestCode = 80877104
)

// rawResetScript resets a session as putScript does, and deallocates
// every prepared statement: the next pgx connection's statement cache
// starts empty.
const rawResetScript = "CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET ROLE; RESET ALL; UNLISTEN *; DISCARD TEMP; DISCARD SEQUENCES; " +
	"SELECT pg_catalog.pg_advisory_unlock_all(); DEALLOCATE ALL"

// pgxDial is the DialFunc of every pgx pool's connections: a session of
// the run's, idle, or a new one.
func (s *pgSession) pgxDial(context.Context, string, string) (net.Conn, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("postgres: the run is over")
	}
	if n := len(s.rawIdle); n > 0 {
		r := s.rawIdle[n-1]
		s.rawIdle = s.rawIdle[:n-1]
		s.mu.Unlock()
		return newSplice(s, r), nil
	}
	s.mu.Unlock()
	var r *rawConn
	if err := s.do(func() (err error) { r, err = s.dialRaw(); return err }); err != nil {
		return nil, err
	}
	return newSplice(s, r), nil
}

// dialRaw connects a session as a worker's, outside every bubble (do),
// and takes its network connection over.
func (s *pgSession) dialRaw() (*rawConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pc, err := pgconn.ConnectConfig(ctx, s.workerCfg.Config.Copy())
	if err != nil {
		return nil, fmt.Errorf("postgres: connect a pgx worker's session: %w", err)
	}
	hc, err := pc.Hijack()
	if err != nil {
		_ = pc.Close(ctx)
		return nil, fmt.Errorf("postgres: take a pgx worker's session over: %w", err)
	}
	hello, err := helloOf(hc)
	if err != nil {
		_ = hc.Conn.Close()
		return nil, err
	}
	return &rawConn{conn: hc.Conn, hello: hello}, nil
}

// helloOf encodes the server's reply to a startup message, as session hc
// got it; the parameters in the order of their names.
func helloOf(hc *pgconn.HijackedConn) ([]byte, error) {
	b, err := (&pgproto3.AuthenticationOk{}).Encode(nil)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(hc.ParameterStatuses))
	for n := range hc.ParameterStatuses {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if b, err = (&pgproto3.ParameterStatus{Name: n, Value: hc.ParameterStatuses[n]}).Encode(b); err != nil {
			return nil, err
		}
	}
	if b, err = (&pgproto3.BackendKeyData{ProcessID: hc.PID, SecretKey: hc.SecretKey}).Encode(b); err != nil {
		return nil, err
	}
	return (&pgproto3.ReadyForQuery{TxStatus: 'I'}).Encode(b)
}

// giveRaw takes a session back from a pgx connection that closed: reset,
// it waits for the next; otherwise it is closed.
func (s *pgSession) giveRaw(r *rawConn) {
	if err := s.resetRaw(r.conn); err != nil {
		_ = r.conn.Close()
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = r.conn.Close()
		return
	}
	s.rawIdle = append(s.rawIdle, r)
}

// resetRaw rolls a session back and resets it. What pgx left unread (the
// rest of a query's rows, a copy) is read and dropped first: ROLLBACK,
// then a query whose one row is a marker of this reset only, then the
// reset script; the replies count from the marker's.
func (s *pgSession) resetRaw(c net.Conn) error {
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	marker := fmt.Sprintf("idemcheck_reset_%d", s.rawResets.Add(1))
	fe := pgproto3.NewFrontend(c, c)
	fe.Send(&pgproto3.Query{String: "ROLLBACK"})
	fe.Send(&pgproto3.Query{String: "SELECT '" + marker + "'"})
	fe.Send(&pgproto3.Query{String: rawResetScript})
	if err := fe.Flush(); err != nil {
		return err
	}
	for seen := false; ; {
		msg, err := fe.Receive()
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.DataRow:
			if len(m.Values) == 1 && string(m.Values[0]) == marker {
				seen = true
			}
		case *pgproto3.ReadyForQuery:
			if seen {
				return readScript(fe, c)
			}
		}
	}
}

// readScript reads the reset script's replies: no error, and the session
// idle at the end.
func readScript(fe *pgproto3.Frontend, c net.Conn) error {
	var failed error
	for {
		msg, err := fe.Receive()
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			failed = fmt.Errorf("postgres: reset a pgx worker's session: %s (SQLSTATE %s)", m.Message, m.Code)
		case *pgproto3.ReadyForQuery:
			if failed == nil && m.TxStatus != 'I' {
				failed = errors.New("postgres: reset a pgx worker's session: a transaction is still open")
			}
			if failed != nil {
				return failed
			}
			return c.SetDeadline(time.Time{})
		}
	}
}

// closeRaw closes the idle sessions (before the scenarios' database is
// dropped, or when the run ends).
func (s *pgSession) closeRaw() {
	s.mu.Lock()
	idle := s.rawIdle
	s.rawIdle = nil
	s.mu.Unlock()
	for _, r := range idle {
		_ = r.conn.Close()
	}
}

// splice is the network connection of one pgx connection: a session of
// the run's. It answers the startup message itself, swallows Terminate,
// and on Close gives the session back.
type splice struct {
	s *pgSession
	r *rawConn

	// io is held, shared, by every read and write on the session, and
	// exclusively by Close, which first makes them return (a deadline in
	// the past, set under mu, as pgx's deadlines are, so that none of
	// theirs undoes it).
	io sync.RWMutex

	mu sync.Mutex
	// in is the start of the startup exchange pgx wrote; started is set
	// once its startup message was answered; out is what pgx has yet to
	// read of the answers; closed is set by Close.
	in      []byte
	out     []byte
	started bool
	closed  bool
	// armed is what the next statement does on a lock wait (Arm);
	// running is set while the splice runs an armed statement itself,
	// and readable wakes the reads that wait for its replies.
	armed    *PgxWait
	running  bool
	readable *sync.Cond
	// digest hashes what pgx reads once the startup is done (Replies).
	digest replyDigest
}

// newSplice returns the connection of a pgx connection on session r.
func newSplice(s *pgSession, r *rawConn) *splice {
	c := &splice{s: s, r: r}
	c.readable = sync.NewCond(&c.mu)
	return c
}

var _ net.Conn = (*splice)(nil)

func (c *splice) Read(b []byte) (int, error) {
	c.mu.Lock()
	for c.running && !c.closed {
		c.readable.Wait()
	}
	if c.closed {
		c.mu.Unlock()
		return 0, net.ErrClosed
	}
	if len(c.out) > 0 {
		n := copy(b, c.out)
		c.out = c.out[n:]
		if c.started {
			c.digest.feed(b[:n])
		}
		c.mu.Unlock()
		return n, nil
	}
	c.mu.Unlock()
	c.io.RLock()
	defer c.io.RUnlock()
	if c.isClosed() {
		return 0, net.ErrClosed
	}
	n, err := c.r.conn.Read(b)
	c.mu.Lock()
	c.digest.feed(b[:n])
	c.mu.Unlock()
	return n, err
}

func (c *splice) Write(b []byte) (int, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, net.ErrClosed
	}
	if !c.started {
		defer c.mu.Unlock()
		return len(b), c.startup(b)
	}
	if w := c.armed; w != nil && frontendUnit(b) {
		c.armed, c.running = nil, true
		c.mu.Unlock()
		if err := c.runArmed(b, w); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	c.mu.Unlock()
	if bytes.Equal(b, terminate) {
		return len(b), nil
	}
	c.io.RLock()
	defer c.io.RUnlock()
	if c.isClosed() {
		return 0, net.ErrClosed
	}
	return c.r.conn.Write(b)
}

// startup reads what pgx wrote before its startup message was answered:
// encryption requests are declined, the startup message answered with
// the session's hello. c.mu is held.
func (c *splice) startup(b []byte) error {
	c.in = append(c.in, b...)
	for len(c.in) >= 8 {
		n := int(binary.BigEndian.Uint32(c.in))
		if n < 8 || n > 1<<20 {
			return errors.New("postgres: a startup message of pgx's that the harness cannot read")
		}
		if len(c.in) < n {
			return nil
		}
		code := binary.BigEndian.Uint32(c.in[4:])
		c.in = c.in[n:]
		if code == sslRequestCode || code == gssEncRequestCode {
			c.out = append(c.out, 'N')
			continue
		}
		c.started = true
		c.out = append(c.out, c.r.hello...)
		if len(c.in) > 0 {
			return errors.New("postgres: pgx wrote after its startup message before the reply")
		}
		return nil
	}
	return nil
}

func (c *splice) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Close makes the reads and writes under way return, then gives the
// session back (reset) to the run.
func (c *splice) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.readable.Broadcast()
	// Under mu: no deadline of pgx's can come after this one.
	_ = c.r.conn.SetDeadline(time.Unix(1, 0))
	c.mu.Unlock()
	c.io.Lock()
	defer c.io.Unlock()
	c.s.giveRaw(c.r)
	return nil
}

func (c *splice) LocalAddr() net.Addr  { return c.r.conn.LocalAddr() }
func (c *splice) RemoteAddr() net.Addr { return c.r.conn.RemoteAddr() }

// SetDeadline, SetReadDeadline and SetWriteDeadline reach the session
// until Close (pgx's context watcher sets them to interrupt a call).
func (c *splice) SetDeadline(t time.Time) error {
	return c.deadline(func(n net.Conn) error { return n.SetDeadline(t) })
}

func (c *splice) SetReadDeadline(t time.Time) error {
	return c.deadline(func(n net.Conn) error { return n.SetReadDeadline(t) })
}

func (c *splice) SetWriteDeadline(t time.Time) error {
	return c.deadline(func(n net.Conn) error { return n.SetWriteDeadline(t) })
}

func (c *splice) deadline(set func(net.Conn) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	return set(c.r.conn)
}
