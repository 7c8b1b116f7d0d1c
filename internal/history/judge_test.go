package history_test

import (
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/internal/history"
	"github.com/idemcheck/idemcheck/internal/law"
)

// ownJudged are the black-box laws each driver still judges with code of
// its own, each with where and, for the laws the drivers share, why no one
// rule over a history replaces that code without changing a stored
// message or verdict: a law of the registry that needs only a black box
// has a judge function in the table, or is named here.
var ownJudged = map[string]string{
	law.SingleCredit: "consumertest (effect rows once quiet and after the replay, its diff shared with nothing-lost and healthy-applied), the live judge (the first ledger entry or committed effect seen twice, one line); " +
		"a history holds no effects after the replay, no effect rows and no commits, and the two rules differ",
	law.AtMostOnce:      "properties: the credit monitor, at the action that wrote the second entry, its diff the ledger at that action (a history holds the ledger once quiet only)",
	law.ReplayUnchanged: "consumertest: the effect rows of events applied before the replay, or an aggregate consumer's totals (a rise some dead-lettered events' amounts add up to is allowed); a history holds no effects after the replay",
	law.LedgerUnchanged: "properties: the whole ledger around the replay, only an event dead-lettered before it may be credited by it (a rule consumertest's replay-unchanged does not hold)",
	law.BoundedAttempts: "consumertest (the broker's final count per message, and each DLQ entry's attempts, in one breach), the live judge (the deliveries counted, first breach, in one line); " +
		"the rules differ: the live judge reports a DLQ entry's attempts under dlq-metadata (corpus/brokers/rabbitmq-quorum-off-by-one-dlq-metadata.json) and counts deliveries the broker miscounts (corpus/brokers/kafka-kfake-bounded-attempts.json)",
	law.AttemptsCount:       "properties: the attempts monitor, at each delivery, the replay's too; in the table it would also judge consumertest, and the compact state keeps no delivery list for TestTheFastPathAgreesWithTheSharedJudge to hold its fast path to",
	law.AtMostMaxAttempts:   "properties: the attempts monitor, at each delivery, the replay's too (as attempts-count)",
	law.DLQAfterMaxAttempts: "properties: the attempts monitor, at each DLQ entry, pointing at the action after which it appeared, which no record keeps",
	law.PoisonAtOnce:        "properties: the attempts monitor, at each nack and DLQ entry (as dlq-after-max-attempts)",
	law.DLQMetadata: "properties (the attempts monitor: attempts, last error, topic and key present, at the action after which the entry appeared), the live judge (key, topic, group and tenant against the run, attempts against max_attempts, last error against the last delivery, one line); " +
		"the rules differ: the reference world's would pass corpus/brokers/rabbitmq-quorum-off-by-one-dlq-metadata.json",
	law.NothingLost: "consumertest (effects, DLQ and the consumer's own dead letters, its diff shared with single-credit), the live judge (credited or dead-lettered, poison never credited, a healthy event dead-lettered as poison or given up by the consumer, one line); " +
		"the reference world judges its laws instead (credited-or-dlq, quiesces, healthy-applied), and the live judge reports under nothing-lost what the others report under healthy-applied",
	law.Quiesces:         "properties: the drain's result",
	law.CreditedOrDLQ:    "properties: the final ledger against the model (package model/ledger)",
	law.Atomicity:        "properties (the atomicity monitor), consumertest (effects against the dedupe query)",
	law.EffectWithMark:   "properties: the atomicity monitor, after every store write",
	law.ProducerGate:     "its laws' judge functions",
	law.Runs:             "consumertest: the run's own failure (a panic, a hang, a leak)",
	law.CommitAfterApply: "consumertest: a log broker's commits, each judged as it lands against the effects read then; a history holds no commits",
	law.PartitionOrder:   "consumertest: the order of the effects query's rows once quiet; a history holds no effect rows",
}

// TestEveryBlackBoxLawIsJudgedOverTheHistory: a law a black box can show
// has its one judge function in the table, unless a driver still judges it
// with its own code (ownJudged, where it says which); a law in the table
// is a law of the registry a history can show.
func TestEveryBlackBoxLawIsJudgedOverTheHistory(t *testing.T) {
	for _, l := range law.AlwaysLaws() {
		_, judged := history.For(l.ID)
		_, own := ownJudged[l.ID]
		switch {
		case l.Needs != law.BlackBox && judged:
			t.Errorf("%s needs the %s, yet has a judge function over a history", l.ID, l.Needs)
		case l.Needs == law.BlackBox && !judged && !own:
			t.Errorf("%s needs only a black box and has no judge function: add it to the judge table (package internal/history)", l.ID)
		case judged && own:
			t.Errorf("%s has a judge function and is still listed as judged by a driver's own code", l.ID)
		}
	}
	for _, id := range history.Judges() {
		if _, ok := law.Lookup(id); !ok {
			t.Errorf("the judge table holds %s, which is no law of the registry", id)
		}
	}
	for id := range ownJudged {
		if _, ok := law.Lookup(id); !ok {
			t.Errorf("ownJudged names %s, which is no law of the registry", id)
		}
	}
}

// TestStoreLawsAreNotApplicable: a law that needs the store's actions is
// named not applicable over a history, and Judge passes it by.
func TestStoreLawsAreNotApplicable(t *testing.T) {
	for _, l := range law.AlwaysLaws() {
		if why := history.NotApplicable(l.ID); (why != "") != (l.Needs != law.BlackBox) {
			t.Errorf("%s (needs %s): not applicable %q", l.ID, l.Needs, why)
		}
	}
	if bs := history.Judge(&history.History{}, law.NotStuck, law.Fencing); len(bs) != 0 {
		t.Errorf("store laws judged over a history: %v", bs)
	}
}

// producerGate is a clean history of one event, produced once and
// duplicated by the broker.
func producerGate(src history.Source) *history.History {
	return &history.History{Source: src, Groups: []string{"g1"}, Quiesced: true,
		Events:   []history.Event{{ID: "e1", Produced: true}},
		Produces: []history.Produce{{Topic: "orders", Key: "e1", Offset: 0, Origin: broker.Produced}, {Topic: "orders", Key: "e1", Offset: 1, Origin: broker.Duplicated}}}
}

// TestProducerGateInEachDriversWords: not-reenqueued and dlq-once pass a
// clean history and break on a broken one, in the words of the driver
// that recorded it.
func TestProducerGateInEachDriversWords(t *testing.T) {
	for _, src := range []history.Source{history.Reference, history.Consumer, history.Live} {
		if bs := history.Judge(producerGate(src), history.OfProperty(law.ProducerGate)...); len(bs) != 0 {
			t.Fatalf("source %d: a clean history breaks %v", src, bs)
		}
	}
	h := producerGate(history.Reference)
	h.Produces = append(h.Produces, history.Produce{Topic: "orders", Key: "e1", Offset: 2, Origin: broker.Produced})
	h.DLQ = []broker.DLQEntry{{Group: "g1", Offset: 1, Key: "e1"}, {Group: "g1", Offset: 1, Key: "e1"}}
	got := history.Judge(h, history.OfProperty(law.ProducerGate)...)
	want := []string{"/orders/e1 was enqueued by the producer 2 times (offsets [0 2]) after its produce committed", "group g1 offset 1 was dead-lettered 2 times"}
	if len(got) != 2 || got[0].Law != law.NotReenqueued || got[0].Details[0] != want[0] || got[1].Law != law.DLQOnce || got[1].Details[0] != want[1] {
		t.Fatalf("got %+v, want %q", got, want)
	}
	h.Source = history.Live
	if got := history.Judge(h, law.NotReenqueued); len(got) != 1 || got[0].Details[0] != "e1 was enqueued twice: offsets 0 and 2" {
		t.Fatalf("live words: %+v", got)
	}
}

// account is a delivery's line for a test.
type account string

func (a account) String() string { return string(a) }

// TestHealthyApplied: a healthy event dead-lettered for spent attempts is
// excused when the harness's faults spent them and reported, with its
// deliveries, when the consumer gave up on one by itself.
func TestHealthyApplied(t *testing.T) {
	h := &history.History{Source: history.Reference, Groups: []string{"g1"}, Quiesced: true, MaxAttempts: 1,
		Events:     []history.Event{{ID: "e1", Produced: true}},
		Deliveries: []history.Delivery{{Group: "g1", Event: "e1", Offset: 0, Account: account("line 3: w1 got g1/e1")}},
		DLQQuiet:   []broker.DLQEntry{{Group: "g1", Offset: 0, Key: "e1", Attempts: 1}}}
	if bs := history.Judge(h, law.HealthyApplied); len(bs) != 0 {
		t.Fatalf("excused by the harness's faults, yet %v", bs)
	}
	h.Deliveries[0].GaveUp = true
	bs := history.Judge(h, law.HealthyApplied)
	if len(bs) != 1 || bs[0].Law != law.HealthyApplied || !slices.Equal(bs[0].Details, []string{
		"e1 sits in g1's DLQ, never credited, though the harness's faults did not spend its attempts; its deliveries:\n      line 3: w1 got g1/e1"}) {
		t.Fatalf("given up by the consumer: %+v", bs)
	}
	h.Events[0].Poison = true
	if bs := history.Judge(h, law.HealthyApplied); len(bs) != 0 {
		t.Fatalf("poison belongs in the DLQ, yet %v", bs)
	}
}
