package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/properties"
)

// TestBrokerBadInput: every broker the campaign cannot use is a usage
// error naming what is wrong, at once.
func TestBrokerBadInput(t *testing.T) {
	cases := []struct {
		name, env string
		args      []string
		want      string
	}{
		{"unknown broker", "", []string{"broker", "activemq"}, `unknown broker "activemq"`},
		{"unknown config", "", []string{"broker", "nats:nope"}, `unknown configuration "nope"`},
		{"closed port", "amqp://guest:guest@127.0.0.1:1/", []string{"broker", "rabbitmq"}, "broker unreachable"},
		{"unset url", "", []string{"broker", "rabbitmq"}, "IDEMCHECK_RABBITMQ_URL is unset"},
		{"with -mutants", "", []string{"broker", "nats", "-mutants"}, "-mutants: fuzzrun broker has no such flag"},
	}
	if url := os.Getenv("IDEMCHECK_RABBITMQ_URL"); url != "" {
		// A server that answers but refuses the vhost: not "unreachable".
		cases = append(cases, struct {
			name, env string
			args      []string
			want      string
		}{"refused vhost", strings.TrimSuffix(url, "/") + "/idemcheck-no-such-vhost", []string{"broker", "rabbitmq"}, "refused the connection"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("IDEMCHECK_RABBITMQ_URL", c.env)
			r := fuzzrun(t, append(c.args, "-checks", "1")...)
			if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d naming %q", r.code, r.stderr, exitUsage, c.want)
			}
		})
	}
}

// TestBrokerCampaignSavesConfirmedFailures: nats:short-dedupe breaks the
// producer gate (a retry after the window is enqueued again); the campaign
// exits 1 and saves the counterexample, shrunk, atomically, under -corpus.
func TestBrokerCampaignSavesConfirmedFailures(t *testing.T) {
	dir := t.TempDir()
	r := fuzzrun(t, "broker", "nats:short-dedupe", "-checks", "12", "-seed", "1", "-workers", "4", "-corpus", dir, "-json", "-target", "sqlite")
	if r.code != exitViolation && r.code != exitOK {
		t.Fatalf("exit %d, want %d\nstderr: %s", r.code, exitViolation, r.stderr)
	}
	rep := decode[brokerJSON](t, r)
	if r.code == exitOK && rep.Cell(properties.LiveProducerGate).Status == properties.LiveUnconfirmed && rep.LateRuns > 0 {
		t.Skipf("the failure came only in runs that missed their timing (%d late runs): unconfirmed on this loaded machine", rep.LateRuns)
	}
	if rep.Cell(properties.LiveProducerGate).Status != properties.LiveFails || rep.Target != "sqlite" {
		t.Fatalf("report %+v: want producer-gate to fail, target sqlite", rep.Cells)
	}
	c, err := corpus.LoadBrokerCase(filepath.Join(dir, corpus.BrokerCaseName("nats:short-dedupe", properties.LiveProducerGate)))
	if err != nil {
		t.Fatal(err)
	}
	if c.Fix == "" || c.Scenario == nil {
		t.Fatalf("saved case %+v lacks its fix or scenario", c)
	}
	// Shrunk to its core: one event, produced and retried after the window.
	if len(c.Scenario.Events) != 1 || len(c.Scenario.Steps) != 2 || c.Scenario.Steps[1].Op != "retry-produce" {
		t.Fatalf("saved scenario not shrunk to produce + retry: %+v", c.Scenario)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	if len(matches) > 0 {
		t.Fatalf("temporary files left behind: %v", matches)
	}
}

// TestBrokerReplay: a corpus/brokers case breaks its invariant again on
// its own configuration (exit 1, with the trace and the fix) and holds on
// the fixed one (exit 0).
func TestBrokerReplay(t *testing.T) {
	file := filepath.Join("..", "..", corpus.BrokersDir, "nats-no-dlq-nothing-lost.json")
	r := fuzzrun(t, "broker", "nats:no-dlq", "-replay", file)
	if strings.Contains(r.stdout, "no run kept its timing") {
		t.Skipf("no replay kept its timing on this loaded machine:\n%s", r.stdout)
	}
	if r.code != exitViolation || !strings.Contains(r.stdout, "nothing-lost broke again") || !strings.Contains(r.stdout, "fix: ") {
		t.Fatalf("on nats:no-dlq: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = fuzzrun(t, "broker", "nats:advisory-dlq", "-replay", file)
	if r.code != exitOK || !strings.Contains(r.stdout, "DLQ: evt-0002") {
		t.Fatalf("on nats:advisory-dlq: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = fuzzrun(t, "broker", "nats", "-replay", "no-such-file.json")
	if r.code != exitUsage {
		t.Fatalf("a missing file: exit %d, want %d", r.code, exitUsage)
	}
}

// TestBrokerWithConsumer: -broker with -consumer drives a team's consumer
// (an example's handler over *sql.DB) by a real broker: the in-process
// cache of lru credits an event twice after a crash and JetStream's
// redelivery; the counterexample is saved apart from the broker table's
// cells, names the consumer, and replays.
func TestBrokerWithConsumer(t *testing.T) {
	dir := t.TempDir()
	r := fuzzrun(t, "broker", "nats", "-consumer", "lru", "-checks", "24", "-seed", "1", "-workers", "4", "-corpus", dir, "-json")
	if r.code != exitViolation && r.code != exitOK {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	rep := decode[brokerJSON](t, r)
	if rep.Target != "consumer lru" {
		t.Fatalf("target %q, want consumer lru", rep.Target)
	}
	cell := rep.Cell(properties.LiveSingleCredit)
	if r.code == exitOK && cell.Status == properties.LiveUnconfirmed && rep.LateRuns > 0 {
		t.Skipf("the failure came only in runs that missed their timing (%d late runs): unconfirmed on this loaded machine", rep.LateRuns)
	}
	if cell.Status != properties.LiveFails {
		t.Fatalf("single-credit %s, want a confirmed failure", cell.Status)
	}
	file := filepath.Join(dir, corpus.BrokerCaseName("nats:advisory-dlq-lru", properties.LiveSingleCredit))
	c, err := corpus.LoadBrokerCase(file)
	if err != nil {
		t.Fatal(err)
	}
	if c.Consumer != "lru" || !strings.Contains(c.Fix, "dedupe in the database") {
		t.Fatalf("saved case names consumer %q with fix %q", c.Consumer, c.Fix)
	}
	r = fuzzrun(t, "broker", "nats", "-consumer", "lru", "-replay", file)
	if strings.Contains(r.stdout, "no run kept its timing") {
		t.Skipf("no replay kept its timing on this loaded machine")
	}
	if r.code != exitViolation || !strings.Contains(r.stdout, "single-credit broke again") {
		t.Fatalf("replay: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestBrokerWithConsumerBadInput: a consumer a live run cannot judge, or
// a flag the combination cannot mean, is a usage error at once.
func TestBrokerWithConsumerBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"broker", "nats", "-consumer", "balance"}, "per-event effects"},
		{[]string{"broker", "nats", "-consumer", "nope"}, "not an example consumer"},
		{[]string{"broker", "nats", "-consumer", "adr", "-target", "sqlite"}, "replaces the target"},
	}
	for _, c := range cases {
		r := fuzzrun(t, append(c.args, "-checks", "1")...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", c.args, r.code, r.stderr, exitUsage, c.want)
		}
	}
}
