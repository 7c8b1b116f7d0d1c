// Package liveapp runs a team's consumer (consumertest.Consumer: its
// schema, its handler over a *sql.DB, its effects query) under a live
// broker run (faults/runner.LiveApp), so that a real broker's redeliveries,
// dead-lettering and producer dedupe meet the team's own code.
//
// Each consumer group of a run gets a fresh SQLite database in memory with
// the team's schema. A delivery runs the handler to its end, on the
// runner's goroutine; the answer is applied as the handler contract says
// (nil: ack; handler.Poison: dead-letter, then ack; any other error:
// nack). A crash ends the consumer's process: the handler's database
// handle is closed (rolling back anything open) and a Worker factory is
// called again. What a live run cannot do that consumertest.Check does:
// stop a handler between two of its database calls (a live crash comes
// before the handler or after it), and make its calls fail; a scenario's
// transient failure is injected before the handler runs instead.
package liveapp

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// HandlerTimeout bounds one handler call: a handler that has not answered
// by then is taken as crashed (its goroutine is left behind).
const HandlerTimeout = 5 * time.Second

// New checks that c can run under a live broker and returns the factory
// of its per-run applications.
func New(c consumertest.Consumer) (func() (runner.LiveApp, error), error) {
	switch {
	case c.Handler == nil && c.Worker == nil:
		return nil, errors.New("liveapp: the consumer has no Handler and no Worker")
	case strings.TrimSpace(c.Effects.Query) == "":
		return nil, errors.New("liveapp: the consumer has no effects query")
	case c.Effects.Aggregate:
		return nil, fmt.Errorf("liveapp: consumer %q reads its effects as totals (Aggregate); a live run judges per-event effects (PerEvent)", c.Name)
	}
	return func() (runner.LiveApp, error) { return &app{c: c}, nil }, nil
}

var dbSeq atomic.Int64

type app struct {
	c      consumertest.Consumer
	groups []*group
}

// Group implements runner.LiveApp: a fresh database with the schema, and
// the consumer's worker.
func (a *app) Group(ctx context.Context, name string) (runner.LiveAppGroup, error) {
	dsn := fmt.Sprintf("file:/idemcheck-live-%d-%d?vfs=memdb&_txlock=immediate&_pragma=busy_timeout(2000)", os.Getpid(), dbSeq.Add(1))
	admin, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("liveapp: database: %w", err)
	}
	// The admin handle keeps the in-memory database alive for the run.
	admin.SetMaxIdleConns(1)
	if strings.TrimSpace(a.c.Schema) != "" {
		if _, err := admin.ExecContext(ctx, a.c.Schema); err != nil {
			admin.Close()
			return nil, fmt.Errorf("liveapp: %w: the schema: %w", consumertest.ErrBadInput, err)
		}
	}
	g := &group{app: a, name: name, dsn: dsn, admin: admin}
	if err := g.start(); err != nil {
		admin.Close()
		return nil, err
	}
	a.groups = append(a.groups, g)
	return g, nil
}

// Close implements runner.LiveApp.
func (a *app) Close() error {
	var errs []error
	for _, g := range a.groups {
		errs = append(errs, g.stop(), g.admin.Close())
	}
	return errors.Join(errs...)
}

type group struct {
	app    *app
	name   string
	dsn    string
	admin  *sql.DB
	db     *sql.DB // the handler's handle, closed by a crash
	h      handler.Func
	closer io.Closer
	starts int
}

// start opens the handler's database handle and builds its handler.
func (g *group) start() error {
	db, err := sql.Open("sqlite", g.dsn)
	if err != nil {
		return fmt.Errorf("liveapp: database: %w", err)
	}
	g.starts++
	h, closer := g.app.c.Handler, io.Closer(nil)
	if w := g.app.c.Worker; w != nil {
		if h, closer, err = w(fmt.Sprintf("%s-w%d", g.name, g.starts), db); err != nil {
			db.Close()
			return fmt.Errorf("liveapp: start the worker: %w", err)
		}
	}
	g.db, g.h, g.closer = db, h, closer
	return nil
}

func (g *group) stop() error {
	var errs []error
	if g.closer != nil {
		errs = append(errs, g.closer.Close())
		g.closer = nil
	}
	if g.db != nil {
		errs = append(errs, g.db.Close())
		g.db = nil
	}
	return errors.Join(errs...)
}

// Handle implements runner.LiveAppGroup.
func (g *group) Handle(ctx context.Context, m broker.Message) runner.LiveAppResult {
	ev, err := event.DecodeOrderPaid(m.Payload)
	if err != nil {
		// The broker handed over something no handler can read.
		return runner.LiveAppResult{Kind: runner.AppPoison, Reason: "undecodable payload: " + err.Error()}
	}
	msg := handler.Message{EventID: ev.EventID, Event: ev, Topic: m.Topic, Group: m.Group, Tenant: m.Tenant,
		IdempotencyKey: m.Key, Attempts: m.Attempts, LastError: m.LastError}
	ctx, cancel := context.WithTimeout(ctx, HandlerTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("the handler panicked: %v", p)
			}
		}()
		done <- g.h(ctx, g.db, msg)
	}()
	select {
	case err = <-done:
	case <-time.After(HandlerTimeout + time.Second):
		// Taken as a crash: the process is restarted, the call left behind.
		err = fmt.Errorf("the handler did not return within %s", HandlerTimeout)
		_ = g.Crash()
	}
	switch {
	case err == nil:
		return runner.LiveAppResult{}
	case handler.IsPoison(err):
		return runner.LiveAppResult{Kind: runner.AppPoison, Reason: err.Error()}
	}
	return runner.LiveAppResult{Kind: runner.AppTransient, Reason: err.Error()}
}

// Crash implements runner.LiveAppGroup: the process ends (its handle
// closes, its Closer is closed) and starts again.
func (g *group) Crash() error {
	return errors.Join(g.stop(), g.start())
}

// Credited implements runner.LiveAppGroup: the first column of the
// effects query's rows.
func (g *group) Credited(ctx context.Context) ([]string, error) {
	rows, err := g.admin.QueryContext(ctx, g.app.c.Effects.Query)
	if err != nil {
		return nil, fmt.Errorf("liveapp: %w: the effects query: %w", consumertest.ErrBadInput, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		switch v := vals[0].(type) {
		case string:
			out = append(out, v)
		case []byte:
			out = append(out, string(v))
		default:
			out = append(out, fmt.Sprint(v))
		}
	}
	return out, rows.Err()
}
