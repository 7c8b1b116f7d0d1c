package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/examples/consumers/catalog"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

func TestConsumerCampaignFindsSavesAndReplays(t *testing.T) {
	dir := t.TempDir()
	r := fuzzrun(t, "consumer", "nounique", "-checks", "400", "-seed", "3", "-corpus", dir, "-html", "", "-json")
	if r.code != exitViolation {
		t.Fatalf("exit %d, want %d\n%s\n%s", r.code, exitViolation, r.stdout, r.stderr)
	}
	var rep consumerJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("-json: %v\n%s", err, r.stdout)
	}
	if rep.Law != consumerharness.LawSingleCredit || rep.CorpusFile == "" || rep.Size > 8 {
		t.Fatalf("report %+v", rep)
	}
	if _, err := os.Stat(rep.CorpusFile); err != nil {
		t.Fatal(err)
	}
	if r := fuzzrun(t, "consumer", "nounique", "-replay", rep.CorpusFile, "-html", ""); r.code != exitViolation || !strings.Contains(r.stdout, "FAIL single-credit") {
		t.Fatalf("replay against the broken consumer: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := fuzzrun(t, "consumer", "adr", "-replay", rep.CorpusFile, "-html", ""); r.code != exitOK || !strings.Contains(r.stdout, "PASS adr") {
		t.Fatalf("replay against the ADR consumer: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := fuzzrun(t, "replay", rep.CorpusFile); r.code != exitUsage || !strings.Contains(r.stderr, "replay it with fuzzrun consumer NAME -replay") {
		t.Fatalf("replay without -consumer: exit %d\n%s", r.code, r.stderr)
	}
}

func TestConsumerCampaignPassesACorrectConsumer(t *testing.T) {
	dir := t.TempDir()
	r := fuzzrun(t, "consumer", "insertfirst", "-checks", "100", "-seed", "1", "-corpus", dir, "-html", "")
	if r.code != exitOK || !strings.Contains(r.stdout, "PASS insertfirst") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 0 {
		t.Fatalf("a passing campaign wrote %v", files)
	}
}

func TestConsumerUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"consumer", "nope"},
		{"consumer", "adr", "-mutants"},
		{"consumer", "adr", "-property", "fencing"},
		{"consumer", "nosuch:thing"},
		{"consumer", "adr", "-replay", "does-not-exist.json"},
	} {
		if r := fuzzrun(t, args...); r.code != exitUsage || !strings.Contains(r.stderr, "fuzzrun: ") {
			t.Errorf("%v: exit %d, want %d\n%s", args, r.code, exitUsage, r.stderr)
		}
	}
}

func TestConsumerSchemesRegister(t *testing.T) {
	registerConsumerScheme("test-scheme", "an example consumer by another name", func(arg string) (consumerharness.Consumer, io.Closer, error) {
		e, _ := catalog.Lookup(arg)
		c := e.Consumer
		c.Name = ""
		return c, nil, nil
	})
	defer func() { delete(consumerSchemes, "test-scheme"); delete(consumerSchemeDocs, "test-scheme") }()
	c, _, err := resolveConsumer("test-scheme:adr", "sqlite")
	if err != nil || c.Name != "test-scheme-adr" || c.Handler == nil {
		t.Fatalf("resolved %q, %v", c.Name, err)
	}
	if r := fuzzrun(t, "list"); !strings.Contains(r.stdout, "test-scheme:ARG") || !strings.Contains(r.stdout, "claimstuck") {
		t.Fatalf("-list does not show the consumers:\n%s", r.stdout)
	}
	r := fuzzrun(t, "list")
	for _, law := range consumerharness.Laws {
		if !strings.Contains(r.stdout, "  "+law+" ") {
			t.Errorf("-list does not show the consumer law %s:\n%s", law, r.stdout)
		}
	}
}

// TestConsumerCampaignsCatchTheTimeBugsAtTheirDefaults: the lease without
// fencing and the clean-up shorter than the redelivery window need the
// scenario's clock in the handler and in the database; a campaign at its
// default budget finds both.
func TestConsumerCampaignsCatchTheTimeBugsAtTheirDefaults(t *testing.T) {
	for _, name := range []string{"lease", "ttl"} {
		r := fuzzrun(t, "consumer", name, "-seed", "1", "-corpus", t.TempDir())
		if r.code != exitViolation || !strings.Contains(r.stdout, "FAIL single-credit") || strings.Contains(r.stdout, "machine's clock") {
			t.Errorf("-consumer %s: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
		}
	}
}

// TestAConsumerCampaignNamesWhatReadTheMachinesClock: a consumer that
// passes 'now' to SQLite's date functions as a parameter, which no
// rewriting reaches, passes, and the report says what read the machine's
// clock.
func TestAConsumerCampaignNamesWhatReadTheMachinesClock(t *testing.T) {
	registerConsumerScheme("now-param", "a consumer that binds 'now'", func(string) (consumerharness.Consumer, io.Closer, error) {
		return consumerharness.Consumer{
			Schema: `CREATE TABLE seen (event_id TEXT PRIMARY KEY, at TEXT)`,
			Handler: func(ctx context.Context, db *sql.DB, m handler.Message) error {
				if m.Event.AmountCents <= 0 {
					return handler.Poison(errors.New("no amount"))
				}
				_, err := db.ExecContext(ctx, `INSERT INTO seen VALUES ($1, datetime($2)) ON CONFLICT DO NOTHING`, m.EventID, "now")
				return err
			},
			Effects: consumerharness.PerEvent("SELECT event_id FROM seen"),
		}, nil, nil
	})
	defer func() { delete(consumerSchemes, "now-param"); delete(consumerSchemeDocs, "now-param") }()
	r := fuzzrun(t, "consumer", "now-param:x", "-checks", "5", "-seed", "1", "-corpus", t.TempDir())
	if r.code != exitOK || !strings.Contains(r.stdout, "NOTE: read the machine's clock") || !strings.Contains(r.stdout, "a parameter 'now'") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
