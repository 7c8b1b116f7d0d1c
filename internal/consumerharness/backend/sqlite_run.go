package backend

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlclock"
	"github.com/idemcheck/idemcheck/internal/sqlscan"
)

// Start implements Starter: the run's scenarios still get a database each,
// but after the first, each is a copy of the file the team's schema made
// (when what the schema ran is all in the file: see sqliteDB.Prepare),
// which costs a write instead of running the schema again. The next
// scenario's database is made ahead, on a goroutine of the run, while the
// current one plays: its file, the admin handle's connection and as many
// worker connections as the last scenario opened, each having read the
// schema (opening a connection and reading the schema is most of what a
// scenario costs the engine). A connection opened early is the same
// connection as one opened at its first use: it holds no lock and no
// transaction until a worker's call, and it rereads the schema if a worker
// changes it.
func (s SQLite) Start(context.Context) (Session, error) {
	p, err := parseSQLiteParams(s.Params)
	if err != nil {
		return nil, err
	}
	ramDir() // sweep now, outside any scenario
	r := &sqliteRun{p: p, templateSet: make(chan struct{}), ready: make(chan *sqliteDB), stop: make(chan struct{}), done: make(chan struct{})}
	r.spares.Store(1)
	// Started here, outside any scenario's bubble: it outlives them.
	go r.warm()
	return r, nil
}

// sqliteRun is a started SQLite: one run's scenarios, all with the same
// schema.
type sqliteRun struct {
	p sqliteParams
	// template is the database file the schema made, once a scenario
	// made it and it can be copied.
	template atomic.Pointer[[]byte]
	// noTemplate is set when what the schema made cannot be copied:
	// every scenario runs it.
	noTemplate atomic.Bool
	// templateSet is closed once template or noTemplate is set.
	templateSet chan struct{}
	setOnce     sync.Once

	// ready hands the database warm made to the next Fresh; done is
	// closed when warm has stopped (on stop, or on an error: Fresh then
	// makes its databases itself).
	ready      chan *sqliteDB
	stop, done chan struct{}
	// spares is how many worker connections warm opens ahead: as many as
	// the last scenario opened.
	spares atomic.Int32
}

func (r *sqliteRun) Name() string { return "sqlite" }

func (r *sqliteRun) Fresh(ctx context.Context) (Database, error) {
	if t := r.template.Load(); t != nil {
		select {
		case d := <-r.ready:
			return d, nil
		case <-r.done:
		}
		d, err := freshSQLite(ctx, r.p, *t)
		if err != nil {
			return nil, err
		}
		d.run = r
		return d, nil
	}
	d, err := freshSQLite(ctx, r.p, nil)
	if err != nil {
		return nil, err
	}
	d.run = r
	return d, nil
}

// warm makes the next scenario's database ahead, once there is a template
// to copy.
func (r *sqliteRun) warm() {
	defer close(r.done)
	select {
	case <-r.templateSet:
	case <-r.stop:
		return
	}
	t := r.template.Load()
	if t == nil {
		return
	}
	for {
		d, err := r.warmDB(*t)
		if err != nil {
			return // Fresh makes them itself, and says what fails
		}
		select {
		case r.ready <- d:
		case <-r.stop:
			d.Close()
			return
		}
	}
}

// warmDB makes a database from template with its admin connection and
// spare worker connections open, the schema read.
func (r *sqliteRun) warmDB(template []byte) (*sqliteDB, error) {
	ctx := context.Background()
	d, err := freshSQLite(ctx, r.p, template)
	if err != nil {
		return nil, err
	}
	d.run = r
	// Any statement reads the schema.
	if _, err := d.admin.ExecContext(ctx, "SELECT 1"); err != nil {
		d.Close()
		return nil, err
	}
	for range r.spares.Load() {
		raw, h, err := openSQLite(d.dsn, d.params, nil)
		if err != nil {
			d.Close()
			return nil, err
		}
		c := &waitConn{raw: raw, h: h}
		if _, err := c.ExecContext(ctx, "SELECT 1", nil); err != nil {
			c.Close()
			d.Close()
			return nil, err
		}
		d.spares = append(d.spares, c)
	}
	return d, nil
}

// Close implements io.Closer: it stops warm and drops the database it
// made ahead; every scenario's database removed its own files.
func (r *sqliteRun) Close() error {
	close(r.stop)
	<-r.done
	return nil
}

// setTemplate records what the schema made (nil: nothing to copy).
func (r *sqliteRun) setTemplate(t *[]byte) {
	r.setOnce.Do(func() {
		if t != nil {
			r.template.Store(t)
		} else {
			r.noTemplate.Store(true)
		}
		close(r.templateSet)
	})
}

// Prepare implements Preparer: a database copied from the run's template
// has the schema's state already; otherwise the schema runs, and, in a
// started run, what it made becomes the template when the file is all of
// it: every statement it ran made something in the file (CREATE of a
// table, index, view or trigger not TEMP, INSERT, REPLACE, UPDATE,
// DELETE), and none read the scenario's clock (the statement names the
// database's clock function, whose key is the scenario's) or drew a
// random number. A PRAGMA, a TEMP table or an ATTACH changes the admin
// connection, which a copy would not have: those schemas run every time.
func (d *sqliteDB) Prepare(ctx context.Context, run func(*sql.DB) error) error {
	if d.prepared {
		return nil
	}
	r := d.run
	if r == nil || r.noTemplate.Load() || r.template.Load() != nil {
		return run(d.admin)
	}
	var ran []string
	d.mu.Lock()
	d.ran = &ran
	d.mu.Unlock()
	err := run(d.admin)
	d.mu.Lock()
	d.ran = nil
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if !copiable(ran) {
		r.setTemplate(nil)
		return nil
	}
	template, err := d.file(ctx)
	if err != nil {
		return err
	}
	r.setTemplate(&template)
	return nil
}

// file reads the database's file, whole: in WAL, once the log is
// checkpointed into it.
func (d *sqliteDB) file(ctx context.Context) ([]byte, error) {
	var mode string
	if err := d.admin.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return nil, fmt.Errorf("sqlite: read the schema's database: %w", err)
	}
	if strings.EqualFold(mode, "wal") {
		if _, err := d.admin.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			return nil, fmt.Errorf("sqlite: checkpoint the schema's database: %w", err)
		}
	}
	b, err := os.ReadFile(d.path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read the schema's database: %w", err)
	}
	return b, nil
}

// copiable reports whether the statements a schema ran left all they did
// in the database's file, the same whatever scenario runs them. It reads
// their tokens, so that a comment is neither a command nor a call.
func copiable(stmts []string) bool {
	if len(stmts) == 0 {
		return false
	}
	for _, q := range stmts {
		w := sqlscan.Significant(q)
		if len(w) == 0 {
			return false
		}
		for _, t := range w {
			if t := strings.ToLower(t.Text); strings.Contains(t, strings.ToLower(sqlclock.SQLiteFunc)) || strings.Contains(t, "random") {
				return false
			}
		}
		switch {
		case w[0].Is("insert"), w[0].Is("replace"), w[0].Is("update"), w[0].Is("delete"):
		case w[0].Is("create"):
			if len(w) < 2 || strings.HasPrefix(strings.ToLower(w[1].Text), "temp") {
				return false
			}
		default:
			return false
		}
	}
	return true
}
