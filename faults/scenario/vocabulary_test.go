package scenario

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// Every op is in the table once, with a meaning and at least one world.
func TestVocabularyTable(t *testing.T) {
	seen := map[Op]bool{}
	for _, term := range Vocabulary() {
		if seen[term.Op] {
			t.Errorf("%s is in the table twice", term.Op)
		}
		seen[term.Op] = true
		if term.Meaning == "" || len(term.Worlds) == 0 {
			t.Errorf("%s: a term needs a meaning and a world that plays it", term.Op)
		}
		if Canonical(term.Op) != term.Op {
			t.Errorf("%s is an old spelling, not a name", term.Op)
		}
	}
}

// The reference world validates exactly the ops the table gives it: a
// step of an op it does not play is an unknown op.
func TestReferenceOpsAreTheTables(t *testing.T) {
	for _, term := range Vocabulary() {
		st := Step{Op: term.Op, Worker: "w1", Node: "n1", N: 1}
		s := small()
		s.Consumption.Steps = []Step{st}
		err := s.Validate()
		if term.Plays(WorldReference) && err != nil {
			t.Errorf("%s: the reference world plays it, yet %v", term.Op, err)
		}
		if !term.Plays(WorldReference) && (err == nil || !strings.Contains(err.Error(), "not a known step")) {
			t.Errorf("%s: the reference world does not play it, yet validation says %v", term.Op, err)
		}
	}
}

// "step", the old name of run, is read as run and never written.
func TestOldSpellingOfRun(t *testing.T) {
	s := small()
	b, err := Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(string(b), `"op": "run"`, `"op": "step"`, 1)
	if old == string(b) {
		t.Fatal("the scenario has no run step to spell the old way")
	}
	got, err := Unmarshal([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(b) {
		t.Fatalf("read under its old spelling and written again:\n%s\nwant\n%s", again, b)
	}
	var op Op
	if err := json.Unmarshal([]byte(`1`), &op); err == nil {
		t.Fatal("a number read as an op")
	}
}

// small is a valid consumption scenario of one worker on one node, whose
// schedule ends with a run.
func small() *Scenario {
	return &Scenario{Version: Version, Kind: KindConsumption, Consumption: &Consumption{
		Config: Config{
			Topic: "orders", Consumers: []string{"ledger"},
			Nodes:   []Node{{Name: "n1"}},
			Workers: []Worker{{Name: "w1", Consumer: "ledger", Node: "n1"}},
			Policy:  broker.Policy{MaxAttempts: 3, BackoffMs: 200, MaxBackoffMs: 800, AckTimeoutMs: 1000},
			LeaseMs: 200, RetentionMs: 6400,
		},
		Events: []Event{{ID: "evt-0001", OrderID: "ord-1", UserID: "usr-1", AmountCents: 100}},
		Steps:  []Step{{Op: OpProduce}, {Op: OpDeliver, Worker: "w1"}, {Op: OpRun, Worker: "w1"}},
	}}
}
