package backend

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

var _ Pgx = (*pgDB)(nil)

// PgxConfig implements Pgx. The pool's connections are the workers'
// (search_path, lock_timeout and the run's name), on the scenarios'
// database: sessions of the run's, kept from one pool to the next (see
// pgxDial). Its own clocks are put out of the schedule's way: a scenario
// moves its time by hours, and a pool that pinged, expired or checked its
// connections as that time passes would make round trips no schedule
// decides.
func (d *pgDB) PgxConfig() (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(d.s.dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres DSN: %w", err)
	}
	cfg.ConnConfig = d.s.workerCfg.Copy()
	// The session is connected already, and encrypted if the DSN says so.
	cfg.ConnConfig.DialFunc = d.s.pgxDial
	cfg.ConnConfig.LookupFunc = func(_ context.Context, host string) ([]string, error) { return []string{host}, nil }
	cfg.ConnConfig.TLSConfig = nil
	cfg.ConnConfig.Fallbacks = nil
	cfg.MaxConnLifetime = 0
	cfg.MaxConnLifetimeJitter = 0
	cfg.MaxConnIdleTime = time.Duration(math.MaxInt64)
	cfg.MinConns = 0
	cfg.HealthCheckPeriod = time.Duration(math.MaxInt64)
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	return cfg, nil
}

// PgxBefore implements Pgx. A statement is screened as a database/sql
// worker's is (see Refused): refused, it fails and the run's next
// scenario does not start; DDL on an event trigger is noted.
func (d *pgDB) PgxBefore(query string) error {
	v, ok := d.s.refusals.Load(query)
	if !ok {
		v, _ = d.s.refusals.LoadOrStore(query, verdictOf(query))
	}
	r := v.(verdict)
	if r.unseen {
		d.s.unseen.Store(true)
	}
	if r.refused != nil && !d.hasExtension(r.refused.extension) {
		d.s.mu.Lock()
		if d.s.refused == nil {
			d.s.refused = r.refused
		}
		d.s.mu.Unlock()
		return r.refused
	}
	if !d.readsClock.Load() {
		return nil
	}
	return d.s.syncClock(d.now())
}

// hasExtension reports whether the run's database has extension name
// already (a CREATE EXTENSION IF NOT EXISTS of it is let through).
func (d *pgDB) hasExtension(name string) bool {
	if name == "" {
		return false
	}
	var has bool
	err := d.s.admin.QueryRow("SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = $1)", name).Scan(&has)
	return err == nil && has
}

// PgxTxStart implements Pgx: the statement BeginTx sends with BEGIN.
func (d *pgDB) PgxTxStart() string {
	return "SELECT pg_catalog.set_config('idemcheck.tx_now', " + pgTimeText(d.now()) + ", true)"
}
