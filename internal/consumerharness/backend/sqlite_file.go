package backend

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
)

// Where the SQLite backends' databases live: a real file each, so that the
// engine locks it as it locks a team's (rollback journal or WAL, a reader
// beside a writer), on a RAM-backed directory so that a scenario costs no
// disk I/O.

// dbFilePrefix starts the name of every database file the backends make:
// idemcheck-sqlite-PID-N.db, with the engine's -journal, -wal and -shm
// files beside it.
const dbFilePrefix = "idemcheck-sqlite-"

// dbFileName matches a database file of the backends or one of the
// engine's files beside it, and captures the pid of the process that made
// it.
var dbFileName = regexp.MustCompile(`^` + dbFilePrefix + `([0-9]+)-[0-9]+\.db(-journal|-wal|-shm)?$`)

var (
	dirOnce sync.Once
	dbDir   string
)

// ramDir is the directory of the databases: /dev/shm when it exists and
// this process may write there, else the system's temporary directory.
// Files that processes now dead left there are swept the first time.
func ramDir() string {
	dirOnce.Do(func() {
		dbDir = os.TempDir()
		if f, err := os.CreateTemp("/dev/shm", dbFilePrefix+"probe-*"); err == nil {
			f.Close()
			os.Remove(f.Name())
			dbDir = "/dev/shm"
		}
		sweep(dbDir)
	})
	return dbDir
}

// dbFile is the path of the database named by key, made by this process.
func dbFile(key int64) string {
	return filepath.Join(ramDir(), fmt.Sprintf("%s%d-%d.db", dbFilePrefix, os.Getpid(), key))
}

// fileDSN is the DSN that opens the database at path with the query
// parameters query.
func fileDSN(path, query string) string {
	u := url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath(), RawQuery: query}
	return u.String()
}

// removeDB removes the database at path and the engine's files beside it.
func removeDB(path string) error {
	var errs []error
	for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
		if err := unlink(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sweep removes the database files in dir that processes now dead left
// (a test binary killed mid-run): only files whose maker's pid is gone.
func sweep(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	own := os.Getpid()
	for _, e := range entries {
		m := dbFileName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pid == own || processAlive(pid) {
			continue
		}
		os.Remove(filepath.Join(dir, e.Name()))
	}
}
