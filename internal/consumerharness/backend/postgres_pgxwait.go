package backend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Lock waits on the pgx route. pgx sends a statement as it is: no driver
// between it and the server could run it under the savepoint the
// database/sql route runs a waiting statement under (see pgConn), nor run
// it again once the wait is over. The session below pgx can (see
// splice): the worker's tracer arms the splice before a statement
// (PgxWait), and the splice runs the statement's messages itself, up to
// the server's ReadyForQuery: under a savepoint when another worker is
// inside a transaction; on a lock timeout it rolls back to the savepoint,
// parks the worker (PgxWait.Wait) and sends the same messages again; the
// replies of the run that counts are what pgx then reads. So two pgx
// workers' transactions interleave, and wait for each other's locks, as
// database/sql workers' do.

// PgxWait is what a pgx worker's next statement does should it meet a lock
// another worker holds: the tracer gives it to the session (PgxArmer)
// before the statement's messages are written.
type PgxWait struct {
	// Savepoint runs the statement under a savepoint: it runs inside a
	// transaction while another worker is inside one, so that a lock
	// timeout leaves the transaction as it was.
	Savepoint bool
	// Wait parks the worker after a lock timeout, busy: nil sends the
	// statement again; ErrPgxDeadlock answers it as the server's deadlock
	// detector would; busy itself is the statement's answer; any other
	// error ends the connection (a crash, a context that ended).
	Wait func(busy error) error
	// Again readies the database for the statement's next run (the
	// clock table follows the scenario's time).
	Again func() error
}

// ErrPgxDeadlock is PgxWait.Wait's answer for a statement given up in a
// deadlock between workers.
var ErrPgxDeadlock = errors.New("postgres: given up in a deadlock between workers")

// PgxSession is the network connection of a pgx worker's session (what
// pgconn.PgConn.Conn returns on the pgx route).
type PgxSession interface {
	// Arm says what the next statement does on a lock wait; nil, that
	// it does not wait (the end of a transaction, a savepoint of the
	// team's, a COPY, a prepare).
	Arm(w *PgxWait)
	// Replies returns a digest of the rows, command tags and errors the
	// server sent pgx since the last call, and starts the next: what a
	// call returned, which pgx's tracer does not show (the rows of a
	// query). The digest is the same for the same replies in every
	// session.
	Replies() uint64
}

var _ PgxSession = (*splice)(nil)

// deadlockRaise aborts the transaction in progress as the server's
// deadlock detector does, with its error (SQLSTATE 40P01).
const deadlockRaise = "DO $idemcheck$ BEGIN RAISE EXCEPTION USING ERRCODE = 'deadlock_detected', MESSAGE = 'deadlock detected', " +
	"DETAIL = 'a deadlock between workers, which PostgreSQL''s detector would break'; END $idemcheck$"

// Arm implements PgxSession.
func (c *splice) Arm(w *PgxWait) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed = w
}

// frontendUnit reports whether b, as pgx wrote it, is one statement's
// messages that the splice can run again whole: complete messages, one
// Query, or an extended query ending in its only Sync with an Execute in
// it, no copy data, and no named statement parsed (a second Parse of it
// would fail: the first one outlives a rollback).
func frontendUnit(b []byte) bool {
	var syncs, queries, executes int
	for len(b) > 0 {
		if len(b) < 5 {
			return false
		}
		typ, n := b[0], int(binary.BigEndian.Uint32(b[1:5]))
		if n < 4 || len(b) < 1+n {
			return false
		}
		body := b[5 : 1+n]
		switch typ {
		case 'Q':
			queries++
		case 'S':
			syncs++
		case 'E':
			executes++
		case 'P':
			if len(body) == 0 || body[0] != 0 {
				return false // a named statement
			}
		case 'B', 'D', 'C':
		default:
			return false // copy data, flush, a function call, terminate
		}
		b = b[1+n:]
		if (typ == 'S' || typ == 'Q') && len(b) > 0 {
			return false // more than one round trip
		}
	}
	return (queries == 1 && syncs == 0 && executes == 0) || (queries == 0 && syncs == 1 && executes > 0)
}

// runArmed runs one statement's messages for pgx under w (see PgxWait),
// and leaves the replies of the run that counts for pgx to read.
func (c *splice) runArmed(unit []byte, w *PgxWait) error {
	defer func() {
		c.mu.Lock()
		c.running = false
		c.readable.Broadcast()
		c.mu.Unlock()
	}()
	for {
		replies, busy, err := c.roundTrip(unit, w.Savepoint)
		if err != nil {
			return err
		}
		if busy == nil {
			c.give(replies)
			return nil
		}
		werr := w.Wait(busy)
		if c.isClosed() {
			return net.ErrClosed
		}
		switch {
		case werr == nil:
			if err := w.Again(); err != nil {
				return err
			}
			continue
		case errors.Is(werr, ErrPgxDeadlock):
			replies, err = c.exchange(deadlockRaise)
			if err != nil {
				return err
			}
		case werr == busy:
			// The statement's answer is its lock timeout, the transaction
			// as the rollback to the savepoint left it: open under a
			// savepoint, else the statement's own, ended.
			status := byte('I')
			if w.Savepoint {
				status = 'T'
			}
			replies, _ = (&pgproto3.ReadyForQuery{TxStatus: status}).Encode(busyReply(busy))
		default:
			return werr
		}
		c.give(replies)
		return nil
	}
}

// give leaves replies for pgx's reads.
func (c *splice) give(replies []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out = append(c.out, replies...)
}

// busyReply encodes busy, a lock timeout the server reported, as its
// ErrorResponse.
func busyReply(busy error) []byte {
	m := pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "55P03", Message: busy.Error()}
	var pe *pgconn.PgError
	if errors.As(busy, &pe) {
		m.Severity, m.SeverityUnlocalized, m.Code, m.Message, m.Where, m.File, m.Line, m.Routine =
			pe.Severity, pe.SeverityUnlocalized, pe.Code, pe.Message, pe.Where, pe.File, pe.Line, pe.Routine
	}
	b, _ := m.Encode(nil)
	return b
}

// roundTrip sends unit, under a savepoint if sp, and reads the replies up
// to its ReadyForQuery. A lock timeout is rolled back (to the savepoint:
// the transaction goes on) and returned as busy, its replies dropped.
func (c *splice) roundTrip(unit []byte, sp bool) (replies []byte, busy error, err error) {
	c.io.RLock()
	defer c.io.RUnlock()
	if c.isClosed() {
		return nil, nil, net.ErrClosed
	}
	var out []byte
	if sp {
		out = queryMsg(out, "SAVEPOINT "+waitSavepoint)
	}
	out = append(out, unit...)
	if _, err := c.r.conn.Write(out); err != nil {
		return nil, nil, err
	}
	rd := &replyReader{conn: c.r.conn}
	if sp {
		if _, failed, _, err := rd.untilReady(); err != nil {
			return nil, nil, err
		} else if failed != nil {
			return nil, nil, fmt.Errorf("postgres: set the savepoint of a pgx worker's statement: %w", failed)
		}
	}
	replies, failed, status, err := rd.untilReady()
	if err != nil {
		return nil, nil, err
	}
	if failed == nil || !isLockTimeout(failed) {
		if sp && status == 'T' {
			if _, rfailed, _, err := c.script(rd, "RELEASE SAVEPOINT "+waitSavepoint); err != nil || rfailed != nil {
				return nil, nil, errors.Join(err, rfailed)
			}
		}
		return append(replies, rd.rest()...), nil, nil
	}
	if sp {
		if _, rfailed, _, err := c.script(rd, "ROLLBACK TO SAVEPOINT "+waitSavepoint+"; RELEASE SAVEPOINT "+waitSavepoint); err != nil || rfailed != nil {
			return nil, nil, errors.Join(err, rfailed)
		}
	}
	c.mu.Lock()
	c.out = append(c.out, rd.rest()...)
	c.mu.Unlock()
	return nil, failed, nil
}

// script runs a script of the harness's on the session and reads its
// replies.
func (c *splice) script(rd *replyReader, script string) ([]byte, error, byte, error) {
	if _, err := c.r.conn.Write(queryMsg(nil, script)); err != nil {
		return nil, nil, 0, err
	}
	return rd.untilReady()
}

// exchange runs script and returns its replies, the ReadyForQuery with
// them.
func (c *splice) exchange(script string) ([]byte, error) {
	c.io.RLock()
	defer c.io.RUnlock()
	if c.isClosed() {
		return nil, net.ErrClosed
	}
	rd := &replyReader{conn: c.r.conn}
	replies, _, _, err := c.script(rd, script)
	if err != nil {
		return nil, err
	}
	return append(replies, rd.rest()...), nil
}

// queryMsg appends a simple Query message of sql to b.
func queryMsg(b []byte, sql string) []byte {
	b, _ = (&pgproto3.Query{String: sql}).Encode(b)
	return b
}

// replyReader reads the server's messages off a session, as they come.
type replyReader struct {
	conn net.Conn
	buf  []byte
}

// untilReady reads messages up to a ReadyForQuery: their bytes, the first
// error the server reported in them, and the transaction status.
func (r *replyReader) untilReady() (replies []byte, failed error, status byte, err error) {
	for {
		for len(r.buf) >= 5 {
			n := int(binary.BigEndian.Uint32(r.buf[1:5]))
			if n < 4 || n > 1<<30 {
				return nil, nil, 0, errors.New("postgres: a reply the harness cannot read")
			}
			if len(r.buf) < 1+n {
				break
			}
			msg := r.buf[:1+n]
			r.buf = r.buf[1+n:]
			replies = append(replies, msg...)
			switch msg[0] {
			case 'E':
				if failed == nil {
					failed = errorOf(msg[5:])
				}
			case 'Z':
				if n == 5 {
					return replies, failed, msg[5], nil
				}
			}
		}
		chunk := make([]byte, 8192)
		k, err := r.conn.Read(chunk)
		r.buf = append(r.buf, chunk[:k]...)
		if err != nil && k == 0 {
			return nil, nil, 0, err
		}
	}
}

// rest is what was read past the last ReadyForQuery.
func (r *replyReader) rest() []byte { return r.buf }

// errorOf decodes an ErrorResponse's body as pgconn's error (what
// isLockTimeout reads).
func errorOf(body []byte) error {
	var m pgproto3.ErrorResponse
	if err := m.Decode(body); err != nil {
		return err
	}
	return &pgconn.PgError{Severity: m.Severity, SeverityUnlocalized: m.SeverityUnlocalized, Code: m.Code, Message: m.Message,
		Detail: m.Detail, Hint: m.Hint, Where: m.Where, File: m.File, Line: m.Line, Routine: m.Routine}
}

// Replies implements PgxSession.
func (c *splice) Replies() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.digest.sum
	c.digest.sum = 0
	return d
}

// replyDigest hashes the server's messages as pgx reads them: the body of
// each DataRow, CommandComplete and ErrorResponse (FNV-1a, chained over
// the messages), framed across reads.
type replyDigest struct {
	sum uint64
	// hdr is the header read so far of the message in progress; left is
	// how many bytes of its body are still to come, and hashed whether
	// they count.
	hdr    []byte
	left   int
	hashed bool
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// feed reads b, the next bytes pgx reads.
func (d *replyDigest) feed(b []byte) {
	for len(b) > 0 {
		if d.left == 0 {
			need := 5 - len(d.hdr)
			k := min(need, len(b))
			d.hdr = append(d.hdr, b[:k]...)
			b = b[k:]
			if len(d.hdr) < 5 {
				return
			}
			typ := d.hdr[0]
			d.left = int(binary.BigEndian.Uint32(d.hdr[1:5])) - 4
			d.hdr = d.hdr[:0]
			d.hashed = typ == 'D' || typ == 'C' || typ == 'E'
			if d.hashed {
				if d.sum == 0 {
					d.sum = fnvOffset
				}
				d.sum = (d.sum ^ uint64(typ)) * fnvPrime
			}
			continue
		}
		k := min(d.left, len(b))
		if d.hashed {
			for _, x := range b[:k] {
				d.sum = (d.sum ^ uint64(x)) * fnvPrime
			}
		}
		d.left -= k
		b = b[k:]
	}
}
