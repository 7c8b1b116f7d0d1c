package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

func TestConsumerDBUsageErrors(t *testing.T) {
	t.Setenv(consumerharness.PostgresEnv, "")
	for args, want := range map[string]string{
		"-db postgres":                      "-db: fuzzrun campaign has no such flag; it is a flag of fuzzrun consumer",
		"consumer adr -db mysql":            `"mysql" is not a database`,
		"consumer adr -db postgres":         "IDEMCHECK_POSTGRES_DSN is not set",
		"-consumer adr -db postgres":        "-consumer is a command now: fuzzrun consumer adr -db postgres",
		"consumer adr -db sqlite -mutants":  "-mutants: fuzzrun consumer has no such flag",
		"consumer adr -db postgres -replay": "needs a value",
	} {
		r := fuzzrun(t, strings.Fields(args)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("fuzzrun %s: exit %d, want %d and %q\n%s", args, r.code, exitUsage, want, r.stderr)
		}
	}
}

func TestConsumerCampaignOnPostgres(t *testing.T) {
	if os.Getenv(consumerharness.PostgresEnv) == "" {
		t.Skipf("%s is not set: skipping the consumer campaign on PostgreSQL", consumerharness.PostgresEnv)
	}
	dir := t.TempDir()
	r := fuzzrun(t, "consumer", "nounique", "-db", "postgres", "-checks", "400", "-seed", "3", "-corpus", dir, "-html", "", "-json")
	if r.code != exitViolation {
		t.Fatalf("exit %d, want %d\n%s\n%s", r.code, exitViolation, r.stdout, r.stderr)
	}
	var rep consumerJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("-json: %v\n%s", err, r.stdout)
	}
	if rep.Law != consumerharness.LawSingleCredit || rep.Size > 8 || !strings.Contains(rep.Replay, "-db postgres") {
		t.Fatalf("report %+v", rep)
	}
	if r := fuzzrun(t, "consumer", "nounique", "-db", "postgres", "-replay", rep.CorpusFile, "-html", ""); r.code != exitViolation || !strings.Contains(r.stdout, "on postgres") {
		t.Fatalf("replay on PostgreSQL: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := fuzzrun(t, "consumer", "adr", "-db", "postgres", "-checks", "100", "-seed", "1", "-corpus", dir, "-html", ""); r.code != exitOK || !strings.Contains(r.stdout, "PASS adr") {
		t.Fatalf("the ADR consumer on PostgreSQL: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
