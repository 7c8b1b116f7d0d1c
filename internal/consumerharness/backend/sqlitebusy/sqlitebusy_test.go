package sqlitebusy

import (
	"context"
	"database/sql/driver"
	"strings"
	"testing"
	"time"

	"modernc.org/sqlite"
)

func open(t *testing.T) driver.Conn {
	t.Helper()
	c, err := (&sqlite.Driver{}).Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func busyTimeout(t *testing.T, c driver.Conn) int64 {
	t.Helper()
	rows, err := c.(driver.QueryerContext).QueryContext(context.Background(), "PRAGMA busy_timeout", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	dest := []driver.Value{nil}
	if err := rows.Next(dest); err != nil {
		t.Fatal(err)
	}
	return dest[0].(int64)
}

// TestHandlesOfTheDriversConn fails when a new version of
// modernc.org/sqlite changes what handles reads from its unexported conn
// (the fields db and tls): the busy handler cannot be installed then, and
// every SQLite scenario would fail to open its connections.
func TestHandlesOfTheDriversConn(t *testing.T) {
	c := open(t)
	db, tls, err := handles(c)
	if err != nil {
		t.Fatalf("modernc.org/sqlite's conn changed: %v", err)
	}
	if db == 0 || tls == nil {
		t.Fatalf("modernc.org/sqlite's conn changed: db %#x, tls %p", db, tls)
	}
	// The handle is the connection's: what is set through it, the
	// connection reads.
	h, err := Install(c, 1234*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if got := busyTimeout(t, c); got != 1234 {
		t.Fatalf("the connection reads busy_timeout %d, want 1234: the handle is not its own", got)
	}
	if h.Timeout() != 1234*time.Millisecond {
		t.Fatalf("Timeout %v", h.Timeout())
	}
	if fp := sqlite3Of(db).FbusyHandler.FxBusyHandler; fp != busyFP {
		t.Fatalf("the busy handler is %#x, not this package's %#x", fp, busyFP)
	}
}

func TestHandlesRefusesAnotherConn(t *testing.T) {
	var other struct{ driver.Conn }
	if _, _, err := handles(&other); err == nil || !strings.Contains(err.Error(), "not a connection of modernc.org/sqlite") {
		t.Fatalf("got %v", err)
	}
	c := open(t)
	c.Close()
	if _, _, err := handles(c); err == nil {
		t.Fatal("a closed connection's handles were read")
	}
}

// TestEnsurePutsTheHandlerBack: a PRAGMA busy_timeout installs SQLite's
// sleeping handler; Ensure (and the statement trace, for a script) puts
// this package's back with the new timeout, and a timeout of 0 leaves no
// handler.
func TestEnsurePutsTheHandlerBack(t *testing.T) {
	c := open(t)
	h, err := Install(c, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	d := sqlite3Of(h.db)
	if d.FbusyHandler.FxBusyHandler != 0 {
		t.Fatal("a connection with no timeout has a handler")
	}
	exec := func(q string) {
		t.Helper()
		if _, err := c.(driver.ExecerContext).ExecContext(context.Background(), q, nil); err != nil {
			t.Fatal(err)
		}
	}
	exec("PRAGMA busy_timeout = 700")
	// The PRAGMA's own run went through the trace.
	if d.FbusyHandler.FxBusyHandler != busyFP || h.Timeout() != 700*time.Millisecond {
		t.Fatalf("after PRAGMA busy_timeout = 700: handler %#x (want %#x), timeout %v", d.FbusyHandler.FxBusyHandler, busyFP, h.Timeout())
	}
	st, err := c.(driver.ConnPrepareContext).PrepareContext(context.Background(), "PRAGMA busy_timeout = 900")
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if d.FbusyHandler.FxBusyHandler == busyFP {
		t.Fatal("compiling PRAGMA busy_timeout no longer installs SQLite's handler: this test tests nothing")
	}
	h.Ensure()
	if d.FbusyHandler.FxBusyHandler != busyFP || h.Timeout() != 900*time.Millisecond {
		t.Fatalf("after Ensure: handler %#x, timeout %v", d.FbusyHandler.FxBusyHandler, h.Timeout())
	}
	exec("PRAGMA busy_timeout = 0")
	h.Ensure()
	if d.FbusyHandler.FxBusyHandler != 0 || h.Timeout() != 0 {
		t.Fatalf("after PRAGMA busy_timeout = 0: handler %#x, timeout %v", d.FbusyHandler.FxBusyHandler, h.Timeout())
	}
}
