package backend

import "strings"

// BeginTakesNoLock reports whether a read-write transaction begins
// DEFERRED (SQLite's default, or _txlock=deferred): such a BEGIN only
// turns the connection's autocommit off and takes no lock, so it commutes
// with every call of every other connection. A partial-order reduction
// may then leave the database's lock out of its footprint. Settings that
// do not parse answer false, the conservative answer.
func (r SQLiteReuse) BeginTakesNoLock() bool { return beginTakesNoLock(r.Params) }

// BeginTakesNoLock is SQLiteReuse's.
func (s SQLite) BeginTakesNoLock() bool { return beginTakesNoLock(s.Params) }

func beginTakesNoLock(params string) bool {
	p, err := parseSQLiteParams(params)
	if err != nil {
		return false
	}
	b := strings.ToUpper(p.begin)
	return b == "BEGIN" || b == "BEGIN DEFERRED"
}
