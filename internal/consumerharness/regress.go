package consumerharness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/corpus/casefile"
	"github.com/idemcheck/idemcheck/internal/consumerharness/backend"
)

// Saved counterexamples are regressions. Check and Verify replay every
// case of the consumer saved in their corpus directory (testdata/
// consumertest unless CorpusDir says otherwise) before they search, as go
// test replays testdata/fuzz and rapid its fail files: a case that still
// breaks a law fails the test at once, with its report; one that passes
// (the consumer was fixed) is logged, and the search goes on. A case found
// against another database schema than the consumer's now is replayed all
// the same, and the log says it no longer applies as saved.

// savedCase is one saved counterexample of a consumer.
type savedCase struct {
	path, law, schema string
	s                 *Scenario
}

// savedCases lists the cases saved in dir against consumer c, in name
// order.
func savedCases(dir string, c Consumer) ([]savedCase, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []savedCase
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		cs, err := casefile.LoadAny(path, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: the saved case %s: %w", ErrBadInput, path, err)
		}
		if !cs.IsConsumer() || cs.Target != c.displayName() {
			continue // another consumer's, or not a consumer's case
		}
		s, err := UnmarshalScenario(cs.Consumer)
		if err != nil {
			return nil, fmt.Errorf("%w: the saved case %s: %w", ErrBadInput, path, err)
		}
		out = append(out, savedCase{path: path, law: cs.Law, schema: cs.Schema, s: s})
	}
	slices.SortFunc(out, func(a, b savedCase) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// replaySaved replays the consumer's saved cases under t (see above).
func replaySaved(t testing.TB, c Consumer, cfg config) {
	t.Helper()
	cases, err := savedCases(cfg.corpusDir, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range cases {
		res, err := replay(c, sc.s, cfg)
		if err != nil {
			t.Fatalf("the saved case %s: %v", sc.path, err)
		}
		note := ""
		if sc.schema != "" && cfg.schemaPrint != "" && sc.schema != cfg.schemaPrint {
			note = " (found against another database schema: it no longer applies as saved, and was replayed all the same)"
		}
		if res.Failed {
			res.CorpusFile = sc.path
			res.Replay = replayCommand(sc.path, t.Name())
			t.Fatalf("consumer %q still breaks %s in the saved case %s%s\n%s", c.displayName(), res.Law, sc.path, note, res.Report())
		}
		t.Logf("saved case %s (it broke %s) passes now%s", sc.path, sc.law, note)
	}
}

// regress replays the consumer's saved cases with a configuration of
// Check's (Verify's own plays on a database it reuses).
func regress(t *testing.T, c Consumer, opts []Option) {
	t.Helper()
	cfg := newConfig(opts)
	cfg.t = t
	if cfg.corpusDir == "" {
		cfg.corpusDir = filepath.Join("testdata", "consumertest")
	}
	stop, err := cfg.start()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := preflight(c, &cfg); err != nil {
		t.Fatal(err)
	}
	replaySaved(t, c, cfg)
}

// schemaPrint is a fingerprint of the database schema of db and of the
// schema text: the tables and their columns as the database has them,
// whatever made them (Schema or Setup).
func schemaPrint(ctx context.Context, db backend.Database, dbName string, c Consumer) (string, error) {
	q := `SELECT m.type, m.name, coalesce(p.name, ''), coalesce(p.type, '') FROM sqlite_master m LEFT JOIN pragma_table_info(m.name) p
WHERE m.name NOT LIKE 'sqlite_%' ORDER BY m.type, m.name, p.cid`
	if dbName == "postgres" {
		q = `SELECT table_name, column_name, data_type FROM information_schema.columns
WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_schema NOT LIKE 'idemcheck%' ORDER BY table_name, ordinal_position`
	}
	if dbName == "mysql" {
		q = `SELECT table_name, column_name, column_type FROM information_schema.columns
WHERE table_schema = DATABASE() ORDER BY table_name, ordinal_position`
	}
	rows, err := readRows(ctx, db.Admin(), q)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(c.Schema))
	for _, r := range rows {
		h.Write([]byte(strings.Join(r, "\x00") + "\n"))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16], nil
}
