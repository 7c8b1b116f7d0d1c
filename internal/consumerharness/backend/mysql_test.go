package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

func mySessionForTest(tb testing.TB) *mySession {
	tb.Helper()
	dsn := os.Getenv("IDEMCHECK_MYSQL_DSN")
	if dsn == "" {
		tb.Skip("IDEMCHECK_MYSQL_DSN is not set: skipping the MySQL backend")
	}
	s, err := MySQL{DSN: dsn}.Start(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s.(*mySession)
}

const mySeededSchema = `
CREATE TABLE accounts (user_id VARCHAR(32) PRIMARY KEY, balance_cents BIGINT NOT NULL);
INSERT INTO accounts VALUES ('u1', 10), ('u2', 20);
CREATE TABLE ledger (id BIGINT AUTO_INCREMENT PRIMARY KEY, user_id VARCHAR(32) NOT NULL, cents BIGINT NOT NULL,
  doubled BIGINT AS (cents * 2) STORED, at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  FOREIGN KEY (user_id) REFERENCES accounts (user_id))`

func myState(t *testing.T, db *sql.DB) string {
	t.Helper()
	var accounts, ledger sql.NullString
	if err := db.QueryRow(`SELECT GROUP_CONCAT(CONCAT(user_id, '=', balance_cents) ORDER BY user_id SEPARATOR ' ') FROM accounts`).Scan(&accounts); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT GROUP_CONCAT(CONCAT(id, ':', cents, ':', doubled) ORDER BY id SEPARATOR ' ') FROM ledger`).Scan(&ledger); err != nil {
		t.Fatal(err)
	}
	return accounts.String + " | " + ledger.String
}

// myScenario is a scenario's database of s, prepared with mySeededSchema,
// and two worker connections to it.
func myScenario(t *testing.T, s *mySession) (Database, *myConn, *myConn) {
	t.Helper()
	ctx := context.Background()
	db, err := s.Fresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.(Preparer).Prepare(ctx, func(a *sql.DB) error { return runScript(a, mySeededSchema) }); err != nil {
		t.Fatal(err)
	}
	var conns [2]*myConn
	for i := range conns {
		c, err := db.Open()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c.(*myConn)
	}
	return db, conns[0], conns[1]
}

func myExec(t *testing.T, c *myConn, query string) error {
	t.Helper()
	_, err := c.ExecContext(context.Background(), query, nil)
	return err
}

func myQueryOne(t *testing.T, c *myConn, query string) string {
	t.Helper()
	rows, err := c.QueryContext(context.Background(), query, nil)
	if err != nil {
		t.Fatal(err)
	}
	dest := make([]driver.Value, 1)
	if err := rows.Next(dest); err != nil {
		t.Fatal(err)
	}
	if err := rows.Next(dest[:0]); err != io.EOF {
		t.Fatalf("more than one row: %v", err)
	}
	return fmt.Sprint(asText(dest[0]))
}

func asText(v driver.Value) any {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v
}

func TestMySQLRunHasDatabasesOfItsOwnDroppedAtClose(t *testing.T) {
	a, b := mySessionForTest(t), mySessionForTest(t)
	if a.work == b.work {
		t.Fatalf("two runs share the database %s", a.work)
	}
	var n int
	if err := a.keeper.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN (?, ?)", b.work, b.seed).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("run b has %d of its 2 databases", n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.keeper.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN (?, ?)", b.work, b.seed).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("run b left %d database(s) after Close", n)
	}
}

func TestMySQLStartSweepsTheDatabasesOfRunsThatAreGoneOnly(t *testing.T) {
	live := mySessionForTest(t)
	ctx := context.Background()
	gone := myRunPrefix + "1_1_0badc0de_w"
	if _, err := live.keeper.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+myIdent(gone)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = live.keeper.ExecContext(ctx, "DROP DATABASE IF EXISTS "+myIdent(gone)) })
	mySessionForTest(t)
	var names []string
	rows, err := live.keeper.QueryContext(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN (?, ?)", gone, live.work)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	rows.Close()
	if len(names) != 1 || names[0] != live.work {
		t.Fatalf("after another run's start: %v, want only the live run's %s", names, live.work)
	}
}

func TestMySQLResetRestoresTheSeededStateAndCounters(t *testing.T) {
	s := mySessionForTest(t)
	db, c1, _ := myScenario(t, s)
	want := myState(t, db.Admin())
	if want != "u1=10 u2=20 | " {
		t.Fatalf("after the schema: %q", want)
	}
	for _, q := range []string{
		"UPDATE `accounts` SET balance_cents = 99 WHERE user_id = 'u1'",
		"INSERT INTO accounts VALUES ('u3', 30)",
		"INSERT INTO ledger (user_id, cents) VALUES ('u1', 5), ('u2', 7)",
	} {
		if err := myExec(t, c1, q); err != nil {
			t.Fatal(err)
		}
	}
	first := myState(t, db.Admin())
	db.Close()
	db2, c3, _ := myScenario(t, s)
	if got := myState(t, db2.Admin()); got != want {
		t.Fatalf("after the reset: %q, want %q", got, want)
	}
	if err := myExec(t, c3, "INSERT INTO accounts VALUES ('u3', 30)"); err != nil {
		t.Fatal(err)
	}
	if err := myExec(t, c3, "UPDATE accounts SET balance_cents = 99 WHERE user_id = 'u1'"); err != nil {
		t.Fatal(err)
	}
	if err := myExec(t, c3, "INSERT INTO ledger (user_id, cents) VALUES ('u1', 5), ('u2', 7)"); err != nil {
		t.Fatal(err)
	}
	if got := myState(t, db2.Admin()); got != first {
		t.Fatalf("the same statements after the reset: %q, the first scenario's %q (AUTO_INCREMENT not set back?)", got, first)
	}
}

func TestMySQLDDLAWorkerRanIsUndone(t *testing.T) {
	s := mySessionForTest(t)
	db, c1, _ := myScenario(t, s)
	for _, q := range []string{
		"CREATE TABLE extra (k INT PRIMARY KEY)",
		"ALTER TABLE accounts ADD COLUMN note TEXT",
		"INSERT INTO extra VALUES (1)",
	} {
		if err := myExec(t, c1, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	db2, _, _ := myScenario(t, s)
	var n int
	if err := db2.Admin().QueryRow(`SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()
AND (TABLE_NAME = 'extra' OR COLUMN_NAME = 'note')`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the worker's DDL outlived its scenario (%d column(s) left)", n)
	}
	if got := myState(t, db2.Admin()); got != "u1=10 u2=20 | " {
		t.Fatalf("after the remake: %q", got)
	}
}

func TestMySQLKeepsRepeatableReadAndClosingRollsBack(t *testing.T) {
	s := mySessionForTest(t)
	db, c1, c2 := myScenario(t, s)
	if got := myQueryOne(t, c1, "SELECT @@tx_isolation"); got != "REPEATABLE-READ" {
		t.Fatalf("isolation %s, want the server's REPEATABLE-READ", got)
	}
	if err := myExec(t, c1, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if got := myQueryOne(t, c1, "SELECT balance_cents FROM accounts WHERE user_id = 'u1'"); got != "10" {
		t.Fatalf("read %s", got)
	}
	if err := myExec(t, c2, "UPDATE accounts SET balance_cents = 11 WHERE user_id = 'u1'"); err != nil {
		t.Fatal(err)
	}
	if got := myQueryOne(t, c1, "SELECT balance_cents FROM accounts WHERE user_id = 'u1'"); got != "10" {
		t.Fatalf("a REPEATABLE READ transaction saw another's commit: %s", got)
	}
	if err := myExec(t, c1, "UPDATE accounts SET balance_cents = balance_cents + 100 WHERE user_id = 'u2'"); err != nil {
		t.Fatal(err)
	}
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	if got := myState(t, db.Admin()); got != "u1=11 u2=20 | " {
		t.Fatalf("after closing a connection in a transaction: %q, want its update rolled back", got)
	}
}

func TestMySQLLockWaitIsAnsweredAtOnceAndKeepsTheTransaction(t *testing.T) {
	s := mySessionForTest(t)
	db, c1, c2 := myScenario(t, s)
	for _, q := range []string{"BEGIN", "UPDATE accounts SET balance_cents = 1 WHERE user_id = 'u1'"} {
		if err := myExec(t, c1, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"BEGIN", "UPDATE accounts SET balance_cents = 2 WHERE user_id = 'u2'"} {
		if err := myExec(t, c2, q); err != nil {
			t.Fatal(err)
		}
	}
	// A row lock, then a gap lock (an insert into the gap a locking read
	// of a missing key holds).
	err := myExec(t, c2, "UPDATE accounts SET balance_cents = 3 WHERE user_id = 'u1'")
	if !db.IsBusy(err) {
		t.Fatalf("a statement that meets a row lock: %v, want a busy answer (1205)", err)
	}
	if got := myQueryOne(t, c1, "SELECT COUNT(*) FROM accounts WHERE user_id = 'u9' FOR UPDATE"); got != "0" {
		t.Fatal(got)
	}
	if err := myExec(t, c2, "INSERT INTO accounts VALUES ('u9', 9)"); !db.IsBusy(err) {
		t.Fatalf("an insert into a gap another transaction locked: %v, want busy", err)
	}
	// The lock wait rolled back the statement only: c2's transaction and
	// its first update go on, and the statement succeeds once c1 commits.
	if err := myExec(t, c1, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := myExec(t, c2, "UPDATE accounts SET balance_cents = 3 WHERE user_id = 'u1'"); err != nil {
		t.Fatal(err)
	}
	if err := myExec(t, c2, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if got := myState(t, db.Admin()); got != "u1=3 u2=2 | " {
		t.Fatalf("after the retried statement: %q", got)
	}
	// NOWAIT is the team's own: its answer, not a wait.
	for _, q := range []string{"BEGIN", "UPDATE accounts SET balance_cents = 4 WHERE user_id = 'u1'"} {
		if err := myExec(t, c1, q); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c2.QueryContext(context.Background(), "SELECT balance_cents FROM accounts WHERE user_id = 'u1' FOR UPDATE NOWAIT", nil)
	if err == nil || db.IsBusy(err) {
		t.Fatalf("FOR UPDATE NOWAIT on a locked row: %v, want an error that is no wait", err)
	}
}

func TestMySQLMetadataLockWaitIsAnsweredAtOnce(t *testing.T) {
	s := mySessionForTest(t)
	db, c1, c2 := myScenario(t, s)
	for _, q := range []string{"BEGIN", "SELECT * FROM ledger"} {
		if _, err := c1.QueryContext(context.Background(), q, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := myExec(t, c2, "ALTER TABLE ledger ADD COLUMN memo TEXT"); !db.IsBusy(err) {
		t.Fatalf("DDL on a table another transaction read: %v, want busy", err)
	}
}

func TestMySQLCrossedLocksAnswerBusyToBothAndTheServerDeadlockIsTheConsumers(t *testing.T) {
	s := mySessionForTest(t)
	db, c1, c2 := myScenario(t, s)
	for _, step := range []struct {
		c *myConn
		q string
	}{{c1, "BEGIN"}, {c1, "UPDATE accounts SET balance_cents = 1 WHERE user_id = 'u1'"},
		{c2, "BEGIN"}, {c2, "UPDATE accounts SET balance_cents = 2 WHERE user_id = 'u2'"}} {
		if err := myExec(t, step.c, step.q); err != nil {
			t.Fatal(err)
		}
	}
	// Each waits for the other: both answer busy at once, and the
	// scheduler, which sees every worker waiting, decides.
	if err := myExec(t, c1, "UPDATE accounts SET balance_cents = 1 WHERE user_id = 'u2'"); !db.IsBusy(err) {
		t.Fatalf("c1 meets c2's lock: %v, want busy", err)
	}
	if err := myExec(t, c2, "UPDATE accounts SET balance_cents = 2 WHERE user_id = 'u1'"); !db.IsBusy(err) {
		t.Fatalf("c2 meets c1's lock: %v, want busy", err)
	}
	// The server's own deadlock answer is the consumer's: not busy, and
	// the trace reads that the consumer must retry.
	err := answer("UPDATE accounts SET balance_cents = 0", &mysql.MySQLError{Number: myDeadlock, Message: "Deadlock found when trying to get lock; try restarting transaction"})
	if db.IsBusy(err) || !strings.Contains(err.Error(), "the consumer must retry") {
		t.Fatalf("the server's deadlock: busy %v, %q", db.IsBusy(err), err)
	}
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != myDeadlock {
		t.Fatalf("the driver's error is not reachable from %v", err)
	}
}

func TestMySQLClockFollowsSetClock(t *testing.T) {
	s := mySessionForTest(t)
	db, c1, _ := myScenario(t, s)
	at := time.Date(2000, 1, 2, 3, 4, 5, 678901000, time.UTC)
	db.(Clocked).SetClock(func() time.Time { return at })
	if got := myQueryOne(t, c1, "SELECT UNIX_TIMESTAMP(NOW(6))"); got != "946782245.678901" {
		t.Fatalf("NOW(6) at %v: %s", at, got)
	}
	if err := myExec(t, c1, "INSERT INTO ledger (user_id, cents) VALUES ('u1', 1)"); err != nil {
		t.Fatal(err)
	}
	if got := myQueryOne(t, c1, "SELECT UNIX_TIMESTAMP(at) FROM ledger"); got != "946782245.678901" {
		t.Fatalf("a column default at %v: %s", at, got)
	}
	at = at.Add(90 * time.Second)
	q, notes := db.(Clocked).Rewrite("SELECT UNIX_TIMESTAMP(SYSDATE(6)), 'sysdate'")
	if len(notes) != 0 {
		t.Fatalf("notes %v", notes)
	}
	rows, err := c1.QueryContext(context.Background(), q, nil)
	if err != nil {
		t.Fatal(err)
	}
	dest := make([]driver.Value, 2)
	if err := rows.Next(dest); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(asText(dest[0]), " ", asText(dest[1])); got != "946782335.678901 sysdate" {
		t.Fatalf("SYSDATE(6), rewritten, 90 s later: %s", got)
	}
	if _, notes := db.(Clocked).Rewrite(`SELECT SYSDATE() FROM t WHERE s = 'a\'b'`); len(notes) != 1 {
		t.Fatalf("SYSDATE where the scanner cannot read MySQL's escapes: notes %v, want one", notes)
	}
}

// BenchmarkMySQLReset measures what a scenario's database costs on MySQL:
// reset, two tables written (a connection dialled, two statements) and
// the state the schema left restored; open, a worker's connection
// dialled and closed.
func BenchmarkMySQLReset(b *testing.B) {
	s := mySessionForTest(b)
	ctx := context.Background()
	prepare := func() Database {
		db, err := s.Fresh(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := db.(Preparer).Prepare(ctx, func(a *sql.DB) error { return runScript(a, mySeededSchema) }); err != nil {
			b.Fatal(err)
		}
		return db
	}
	// write dirties both tables, as a scenario of the ADR consumer does.
	write := func(db Database) {
		c, err := db.Open()
		if err != nil {
			b.Fatal(err)
		}
		ex := c.(*myConn)
		for _, q := range []string{"INSERT INTO ledger (user_id, cents) VALUES ('u1', 1)", "UPDATE accounts SET balance_cents = 0 WHERE user_id = 'u2'"} {
			if _, err := ex.ExecContext(ctx, q, nil); err != nil {
				b.Fatal(err)
			}
		}
		c.Close()
		db.Close()
	}
	write(prepare())
	b.Run("reset", func(b *testing.B) {
		for b.Loop() {
			write(prepare())
		}
	})
	b.Run("open", func(b *testing.B) {
		db := prepare()
		defer db.Close()
		for b.Loop() {
			c, err := db.Open()
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
}

// TestMySQLDescribeSeesDDLAtOnce: a description read again right after a
// table was made, or one altered, tells it, though the catalog's stamp
// has the tables' times to the second only; and once the scenario's DDL
// is undone, the description is the schema's again.
func TestMySQLDescribeSeesDDLAtOnce(t *testing.T) {
	s := mySessionForTest(t)
	db, c1, _ := myScenario(t, s)
	describe := func() string {
		t.Helper()
		desc, err := db.(Describer).Describe(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(desc.Queries, "; ")
	}
	schema := describe()
	if again := describe(); again != schema {
		t.Fatalf("described twice: %q, then %q", schema, again)
	}
	for _, q := range []string{"CREATE TABLE extra (k INT PRIMARY KEY)", "ALTER TABLE accounts ADD COLUMN note TEXT"} {
		before := describe()
		if err := myExec(t, c1, q); err != nil {
			t.Fatal(err)
		}
		if after := describe(); after == before {
			t.Errorf("after %s the description is the same: %q", q, after)
		}
	}
	if got := describe(); !strings.Contains(got, "`extra`") || !strings.Contains(got, "`note`") {
		t.Errorf("the description misses the DDL: %q", got)
	}
	db.Close()
	db2, _, _ := myScenario(t, s)
	desc, err := db2.(Describer).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(desc.Queries, "; "); got != schema {
		t.Errorf("after the remake: %q, want the schema's %q", got, schema)
	}
}
