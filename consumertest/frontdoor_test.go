package consumertest_test

import (
	"context"
	"database/sql"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/handler"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/faults/gen"
)

// maxFrontDoor bounds the names package consumertest exports. The front
// door holds what a team calls from its tests; the scenario vocabulary,
// the handler's contract and the laws live in the subpackages, and the
// rest of the harness in internal/consumerharness. A name that would push
// the count over belongs in one of those.
const maxFrontDoor = 30

// Every exported const, var, type and function at the package's top level
// counts (methods and struct fields do not): the package is parsed, not
// its documentation read, so that no name escapes by being undocumented.
func TestFrontDoorStaysSmall(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "consumertest" {
			t.Fatalf("%s is of package %s", e.Name(), f.Name.Name)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatal("no file of package consumertest here")
	}
	var names []string
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(names)
	if len(names) > maxFrontDoor {
		t.Errorf("package consumertest exports %d names, more than %d: %s", len(names), maxFrontDoor, strings.Join(names, " "))
	}
	for _, want := range []string{"Consumer", "Check", "Hunt", "Fuzz", "Replay", "Verify", "Explore", "Bounds", "Result", "VerifyResult", "Option"} {
		if !slices.Contains(names, want) {
			t.Errorf("package consumertest does not export %s: %s", want, strings.Join(names, " "))
		}
	}
}

// A team's test reaches everything through the public packages: a
// scenario written and read back with package scenario, played with
// Replay, its verdict named with package laws, a handler from package
// handler.
func TestTheFrontDoorPlaysAScenarioOfTheVocabulary(t *testing.T) {
	c := consumertest.Consumer{
		Name:   "no-dedupe",
		Schema: `CREATE TABLE ledger (event_id TEXT NOT NULL, amount_cents INTEGER NOT NULL)`,
		Handler: func(ctx context.Context, db *sql.DB, m handler.Message) error {
			if m.Poisoned() {
				return handler.Poison(errors.New("no amount"))
			}
			_, err := db.ExecContext(ctx, `INSERT INTO ledger (event_id, amount_cents) VALUES ($1, $2)`, m.EventID, m.Event.AmountCents)
			return err
		},
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
	}
	written := &scenario.Scenario{Version: scenario.Version, Workers: 1, Policy: scenario.DefaultPolicy,
		Events: []scenario.Event{{ID: "e1", User: "u1", Amount: 100}},
		Steps:  []scenario.Step{{Op: scenario.OpRun, Worker: 1}, {Op: scenario.OpRun, Worker: 1}}}
	js, err := written.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Unmarshal(js)
	if err != nil {
		t.Fatal(err)
	}
	res, err := consumertest.Replay(c, s)
	if err != nil {
		t.Fatal(err)
	}
	// The stream's replay after the drain delivers e1 again, and a
	// consumer that keeps no record of what it applied applies it twice.
	if !res.Failed || res.Law != laws.SingleCredit || laws.Doc(res.Law) == "" {
		t.Fatalf("a consumer without dedupe: failed %v, law %q (%q)\n%s", res.Failed, res.Law, laws.Doc(res.Law), res.Report())
	}
	if !slices.Contains(laws.All, res.Law) || len(res.Breaches) == 0 || res.Breaches[0].Law != res.Law {
		t.Errorf("the verdict's law %q is not among laws.All %v, or not its first breach's: %+v", res.Law, laws.All, res.Breaches)
	}
	if res.Outcome == nil || res.Outcome.Trace == nil || res.Outcome.Trace.Len() == 0 {
		t.Error("the counterexample has no trace")
	}
}

// A crash stops a worker inside the handler, so it never returns. The
// options that shape the drawn schedule are seen from the handler alone:
// with crash weighed 0 (Faults), or with no explicit step at all
// (MaxSteps(0): only the harness's drain, which never crashes), every
// handler call returns; with crashes weighed heavily, some never do.
func TestFaultsAndMaxStepsShapeTheDrawnSchedules(t *testing.T) {
	hunt := func(opts ...consumertest.Option) (entered, returned int) {
		c := consumertest.Consumer{
			Name: "counted",
			Schema: `CREATE TABLE ledger (event_id TEXT PRIMARY KEY, amount_cents INTEGER NOT NULL);
				CREATE TABLE processed (event_id TEXT PRIMARY KEY)`,
			Handler: func(ctx context.Context, db *sql.DB, m handler.Message) error {
				entered++
				err := markAndCredit(ctx, db, m)
				returned++ // not deferred: a crash unwinds the worker's goroutine
				return err
			},
			Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		}
		res, err := consumertest.Hunt(c, append([]consumertest.Option{consumertest.Seed(7), consumertest.Checks(25)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed {
			t.Fatalf("a correct consumer was flagged:\n%s", res.Report())
		}
		return entered, returned
	}
	crashy := gen.Weights{gen.KindCrash: 40}
	if e, r := hunt(consumertest.Faults(crashy)); e == r {
		t.Fatalf("with crashes weighed 40, every one of %d handler calls returned: no crash was drawn", e)
	}
	if e, r := hunt(consumertest.Faults(gen.Weights{gen.KindCrash: 0})); e != r {
		t.Errorf("with crash weighed 0, %d of %d handler calls never returned", e-r, e)
	}
	if e, r := hunt(consumertest.Faults(crashy), consumertest.MaxSteps(0)); e != r || e == 0 {
		t.Errorf("with MaxSteps(0), %d of %d handler calls never returned (want every call to return, and some calls)", e-r, e)
	}
}

// markAndCredit is a correct consumer's work: the mark and the credit in
// one transaction, the credit skipped when the mark was there.
func markAndCredit(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Poisoned() {
		return handler.Poison(errors.New("no amount"))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO processed (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, amount_cents) VALUES ($1, $2)`, m.EventID, m.Event.AmountCents); err != nil {
		return err
	}
	return tx.Commit()
}
