package backend

import (
	"context"
	"database/sql/driver"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sqliteParams is a team's SQLite settings, validated: what every
// connection of the run's database opens with.
type sqliteParams struct {
	// open is the DSN's query, without the busy timeout: a connection
	// opens with no busy handler, so that the PRAGMAs it runs at open can
	// never sleep; the harness then sets the timeout with its own handler.
	open string
	// busy is the declared busy timeout (0: none, SQLite's default).
	busy time.Duration
	// begin is the statement that begins a read-write transaction, as
	// modernc.org/sqlite runs it for _txlock ("BEGIN", SQLite's DEFERRED,
	// by default).
	begin string
}

// sqliteKeys are the DSN keys of modernc.org/sqlite a team may declare: the
// driver's own keys, settings of a connection, and of SQLite's URI
// parameters those that leave the database the run's own, locked by the
// engine. Any other key is an error rather than ignored, as the driver
// would: a misspelt setting must not pass for a declared one.
var sqliteKeys = map[string]bool{
	"_pragma":       true,
	"_busy_timeout": true, "_timeout": true,
	"_foreign_keys": true, "_fk": true,
	"_journal_mode": true, "_journal": true,
	"_synchronous": true, "_sync": true,
	"_auto_vacuum": true, "_vacuum": true,
	"_query_only":  true,
	"_txlock":      true,
	"_time_format": true, "_time_integer_format": true, "_timezone": true,
	"_inttotime": true, "_texttotime": true,
	"_dqs": true, "_defensive": true, "_error_rc": true,
	"cache": true, // private only, see below
	"psow":  true,
}

// refusedKeys are SQLite's URI parameters that would make the database
// not the run's own, or not locked by the engine, with why.
var refusedKeys = map[string]string{
	"vfs":       "it chooses another VFS than the file the harness made",
	"mode":      "it chooses another database (mode=memory) or opens the run's read-only",
	"immutable": "it turns the engine's locking off",
	"nolock":    "it turns the engine's locking off",
	"modeof":    "it names another file",
}

// pragmaForm is one _pragma value: a single PRAGMA, NAME, NAME(VALUE) or
// NAME=VALUE, optionally on schema main.
var pragmaForm = regexp.MustCompile(`^\s*(?:main\s*\.\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(\s*([^();]*?)\s*\)|=\s*([^();]*?))?\s*$`)

// parsedParams caches parseSQLiteParams by its input: every scenario of a
// run parses the same string.
var parsedParams sync.Map // string -> sqliteParams

// parseSQLiteParams validates params, the query parameters of a
// modernc.org/sqlite DSN, and says what a connection opens with. An error
// names the parameter it refuses.
func parseSQLiteParams(params string) (sqliteParams, error) {
	if v, ok := parsedParams.Load(params); ok {
		return v.(sqliteParams), nil
	}
	p, err := parseSQLiteParamsUncached(params)
	if err != nil {
		return sqliteParams{}, fmt.Errorf("sqlite params %q: %w", params, err)
	}
	parsedParams.Store(params, p)
	return p, nil
}

func parseSQLiteParamsUncached(params string) (sqliteParams, error) {
	raw := strings.TrimSpace(params)
	if i := strings.IndexByte(raw, '?'); i > 0 || strings.HasPrefix(raw, "file:") {
		return sqliteParams{}, fmt.Errorf("a database name is refused (the harness makes the run's database file): give the DSN's query parameters only")
	}
	q, err := url.ParseQuery(strings.TrimPrefix(raw, "?"))
	if err != nil {
		return sqliteParams{}, err
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	p := sqliteParams{begin: "BEGIN"}
	var busyKey, busyPragma string
	for _, k := range keys {
		if why, ok := refusedKeys[k]; ok {
			return sqliteParams{}, fmt.Errorf("parameter %s is refused: %s", k, why)
		}
		if !sqliteKeys[k] {
			return sqliteParams{}, fmt.Errorf("unknown parameter %q (modernc.org/sqlite's keys start with an underscore: _pragma, _txlock, _busy_timeout, ...)", k)
		}
		for _, v := range q[k] {
			switch k {
			case "cache":
				if !strings.EqualFold(v, "private") {
					return sqliteParams{}, fmt.Errorf("parameter cache=%s is refused: a shared cache locks tables in the driver, outside SQLite's busy handler", v)
				}
			case "_txlock":
				switch strings.ToLower(v) {
				case "deferred", "immediate", "exclusive":
					p.begin = "BEGIN " + strings.ToUpper(v)
				default:
					return sqliteParams{}, fmt.Errorf("parameter _txlock=%s: want deferred, immediate or exclusive", v)
				}
			case "_busy_timeout", "_timeout":
				busyKey = k
			case "_pragma":
				name, value, err := checkPragma(v)
				if err != nil {
					return sqliteParams{}, err
				}
				if name == "busy_timeout" {
					if value == "" {
						return sqliteParams{}, fmt.Errorf("parameter _pragma=%s: busy_timeout needs a value", v)
					}
					busyPragma = value
				}
			}
		}
	}
	// The busy timeout in force is the last the driver applies: _timeout
	// wins over _busy_timeout (the alias wins, as in the driver), and a
	// _pragma over both (the driver applies the _pragma list after).
	busy := ""
	if busyKey != "" {
		busy = q.Get(busyKey)
		if q.Has("_timeout") {
			busy = q.Get("_timeout")
			busyKey = "_timeout"
		}
	}
	if busyPragma != "" {
		busy, busyKey = busyPragma, "_pragma=busy_timeout"
	}
	if busy != "" {
		ms, err := strconv.ParseInt(strings.TrimSpace(busy), 10, 32)
		if err != nil {
			return sqliteParams{}, fmt.Errorf("parameter %s: the busy timeout %q is not a number of milliseconds", busyKey, busy)
		}
		p.busy = time.Duration(max(ms, 0)) * time.Millisecond
	}
	// The connection opens without the busy timeout (see open).
	q.Del("_busy_timeout")
	q.Del("_timeout")
	if pragmas := q["_pragma"]; len(pragmas) > 0 {
		kept := pragmas[:0:0]
		for _, v := range pragmas {
			if name, _, _ := checkPragma(v); name != "busy_timeout" {
				kept = append(kept, v)
			}
		}
		q["_pragma"] = kept
	}
	p.open = q.Encode()
	if err := checkDriverParams(p.open); err != nil {
		return sqliteParams{}, err
	}
	return p, nil
}

// checkPragma checks one _pragma value and returns its name, lower case,
// and its value.
func checkPragma(v string) (name, value string, err error) {
	m := pragmaForm.FindStringSubmatch(v)
	if m == nil {
		return "", "", fmt.Errorf("parameter _pragma=%s: want one PRAGMA, as name(value) or name=value", v)
	}
	name = strings.ToLower(m[1])
	value = m[2] + m[3]
	known, err := sqlitePragmas()
	if err != nil {
		return "", "", err
	}
	if !known[name] {
		return "", "", fmt.Errorf("parameter _pragma=%s: SQLite has no PRAGMA %s (it would ignore it)", v, name)
	}
	switch name {
	case "locking_mode":
		if strings.EqualFold(strings.Trim(value, `'"`), "exclusive") {
			return "", "", fmt.Errorf("parameter _pragma=%s is refused: the harness opens several connections (the workers' and its own), which an exclusive locking mode shuts out", v)
		}
	case "journal_mode":
		switch strings.ToUpper(strings.Trim(value, `'"`)) {
		case "", "DELETE", "TRUNCATE", "PERSIST", "MEMORY", "WAL", "OFF":
		default:
			return "", "", fmt.Errorf("parameter _pragma=%s: want a journal mode of DELETE, TRUNCATE, PERSIST, MEMORY, WAL or OFF", v)
		}
	}
	return name, value, nil
}

// The PRAGMAs SQLite knows, read once from pragma_list.
var (
	pragmasOnce sync.Once
	pragmas     map[string]bool
	pragmasErr  error
)

func sqlitePragmas() (map[string]bool, error) {
	pragmasOnce.Do(func() {
		pragmas, pragmasErr = readPragmaList()
	})
	return pragmas, pragmasErr
}

func readPragmaList() (map[string]bool, error) {
	c, err := drv.Open(":memory:")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	rows, err := c.(driver.QueryerContext).QueryContext(context.Background(), "PRAGMA pragma_list", nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read the PRAGMAs SQLite knows: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	dest := []driver.Value{nil}
	for rows.Next(dest) == nil {
		if s, ok := dest[0].(string); ok {
			out[strings.ToLower(s)] = true
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sqlite: pragma_list is empty")
	}
	return out, nil
}

// checkDriverParams opens a connection to a database in memory with the
// parameters, so that the driver's own checks (a bad _txlock,
// _journal_mode or _time_format value) fail here, naming the parameter,
// rather than at a scenario's first connection.
func checkDriverParams(query string) error {
	if query == "" {
		return nil
	}
	c, err := drv.Open("file::memory:?" + query)
	if err != nil {
		return err
	}
	return c.Close()
}
