package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"testing"

	_ "modernc.org/sqlite"
)

func TestScratch(t *testing.T) {
	ctx := context.Background()
	dsn := "file:/scratch1?vfs=memdb&_pragma=busy_timeout(5000)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	anchor, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var jm string
	anchor.QueryRowContext(ctx, "pragma journal_mode").Scan(&jm)
	t.Log("journal", jm)
	if _, err := anchor.ExecContext(ctx, "create table t(x integer primary key, y text)"); err != nil {
		t.Fatal(err)
	}
	c1, _ := db.Conn(ctx)
	c2, _ := db.Conn(ctx)
	if _, err := c1.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	c1.ExecContext(ctx, "insert into t values (1,'a')")
	// c2 reads while c1 holds RESERVED: should see nothing
	var n int
	err = c2.QueryRowContext(ctx, "select count(*) from t").Scan(&n)
	t.Log("c2 read", n, err)
	// crash c1
	err = c1.Raw(func(any) error { return driver.ErrBadConn })
	t.Log("raw", err)
	err = c2.QueryRowContext(ctx, "select count(*) from t").Scan(&n)
	t.Log("after crash", n, err)
	if _, err := c2.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	c2.ExecContext(ctx, "insert into t values (2,'b') returning x")
	c2.ExecContext(ctx, "COMMIT")
	db2, _ := sql.Open("sqlite", "file:/scratch1?vfs=memdb")
	db2.QueryRowContext(ctx, "select count(*) from t").Scan(&n)
	t.Log("other pool", n)
	var v string
	db.QueryRowContext(ctx, "select sqlite_version()").Scan(&v)
	var ms int64
	db.QueryRowContext(ctx, "select CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)").Scan(&ms)
	t.Log(v, ms)
}
