package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// World names a world that plays scenarios: the reference implementation
// (this package's Scenario) or a team's consumer (consumertest/scenario's).
type World string

// The worlds a scenario is played in.
const (
	// WorldReference is the reference implementation: broker, producer
	// gate, claim store, pipeline workers and skewed nodes.
	WorldReference World = "reference"
	// WorldConsumer is a team's consumer, run by consumertest against a
	// real database.
	WorldConsumer World = "consumer"
)

// Term is one word of the scenario vocabulary: an op's name, its one
// meaning, and the worlds that play it. A word means the same in every
// world that plays it; what differs is only how far a worker's scheduling
// point lies (a pipeline step in the reference world, a database call in
// a team's consumer).
type Term struct {
	Op      Op
	Meaning string
	Worlds  []World
}

// Plays reports whether w plays the term's op.
func (t Term) Plays(w World) bool {
	for _, x := range t.Worlds {
		if x == w {
			return true
		}
	}
	return false
}

var (
	both      = []World{WorldReference, WorldConsumer}
	reference = []World{WorldReference}
	consumer  = []World{WorldConsumer}
)

// vocabulary is the one table of the scenario vocabulary, in the order
// docs list it. Both worlds' op constants are defined from its names, and
// a test holds both worlds' schedules and the docs to it.
var vocabulary = []Term{
	{OpProduce, "the producer publishes an event through the idempotency gate", reference},
	{OpProduceFail, "a produce fails after the gate marked the event pending", reference},
	{OpDeliver, "the broker hands a worker an eligible message", reference},
	{OpRun, "a worker runs to its next scheduling point (a pipeline step; a database call)", both},
	{OpFail, "the call a worker is parked at fails transiently, as a lost connection does", consumer},
	{OpCrash, "a worker crashes where it stands: its delivery and open transaction are lost, it restarts idle", both},
	{OpAdvance, "true time moves forward by Ms milliseconds", both},
	{OpDuplicate, "the broker delivers an event's message again (N extra copies in the reference world, one in a consumer)", both},
	{OpReplay, "the broker delivers the whole stream again", both},
	{OpRebalance, "a log's consumer group moves a partition to another worker: the old owner's commits are fenced, the new owner is assigned it", consumer},
	{OpSkew, "a node's wall clock is set Ms away from true time", reference},
	{OpClockStep, "a node's wall clock jumps by Ms", reference},
	{OpCleanup, "the retention job runs on a worker's node", reference},
}

// Vocabulary is the table of the scenario vocabulary: every op of every
// world, once, with its meaning and the worlds that play it.
func Vocabulary() []Term { return append([]Term(nil), vocabulary...) }

// OpsOf lists the ops world w plays, in the table's order.
func OpsOf(w World) []Op {
	var out []Op
	for _, t := range vocabulary {
		if t.Plays(w) {
			out = append(out, t.Op)
		}
	}
	return out
}

// oldSpellings are the names an op was once written under, still read
// wherever a schedule or a menu is read (stored scenarios, corpus files,
// menus and weights given on the command line) and never written.
var oldSpellings = map[Op]Op{
	"step": OpRun,
}

// Canonical is op under its current name: an old spelling ("step") is
// read as the op it now names ("run"); any other op is itself.
func Canonical(op Op) Op {
	if now, ok := oldSpellings[op]; ok {
		return now
	}
	return op
}

// UnmarshalJSON reads an op, its old spellings included, so that
// scenarios stored before a rename keep their meaning.
func (o *Op) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		return fmt.Errorf("op: %s is not a string", bytes.TrimSpace(b))
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*o = Canonical(Op(s))
	return nil
}
