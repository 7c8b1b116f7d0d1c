// Package history is the one record of a consumption run that every driver
// converts what it observed into, and the one judge of the laws over it:
// the reference world (the runner's actions), a team's consumer
// (consumertest's outcome) and a live broker (its recorded history) each
// build a History, and each law in the judge table (Judges) is one
// function over it, whichever driver asks.
//
// A History holds what a black box shows: the events, the produces, every
// delivery with its answer and the harness's faults in it, the dead-letter
// queue once quiet and at the end, and the effects per consumer group and
// event (before the first delivery, once quiet, after the replay). A law
// that needs more (the claim store's actions, the projection parts'
// stamps) is judged only by the drivers that see them; on a History it is
// not applicable (Applicable), never restated.
package history

import (
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/internal/law"
)

// Source says which driver recorded a history: the words its breaches are
// said in, so that each driver's reports read as they always have.
type Source uint8

// The sources.
const (
	// Reference: the runner's reference world (and any Target it plays).
	Reference Source = iota + 1
	// Consumer: a team's consumer under consumertest.
	Consumer
	// Live: a real broker, recorded by runner.RunLive.
	Live
)

// History is one run, as every judge reads it.
type History struct {
	// Source is the driver that recorded it.
	Source Source
	// Groups are the consumer groups, in the scenario's order.
	Groups []string
	// Events are the scenario's events, in its order.
	Events []Event
	// MaxAttempts is the retry policy's limit.
	MaxAttempts int
	// Quiesced is false when the run never went quiet.
	Quiesced bool
	// Produces are the messages enqueued for the first group, in order:
	// the producer's, the broker's duplicates and the replay's (a live
	// run: every produce, as the producer saw it).
	Produces []Produce
	// Deliveries are every delivery before the replay, in order.
	Deliveries []Delivery
	// DLQQuiet is the dead-letter queue once quiet, before the replay;
	// DLQ the one at the end.
	DLQQuiet, DLQ []broker.DLQEntry
	// Credits count the effects of each event per group once quiet,
	// before the replay (nil when the driver cannot count them per event:
	// a consumer whose effects are totals per user).
	Credits map[law.GroupKey]int
}

// Event is one event of the scenario.
type Event struct {
	ID string
	// Poison: no handler run of it can succeed; it must be dead-lettered.
	Poison bool
	// Produced: some produce of it was enqueued.
	Produced bool
}

// Produce is one message enqueued for the first group (see
// History.Produces).
type Produce struct {
	Tenant, Topic, Key string
	Offset             int64
	Origin             broker.Origin
}

// Delivery is one delivery, what the consumer answered and what the
// harness did to it.
type Delivery struct {
	Group, Event string
	Offset       int64
	// Attempt is the attempt count the delivery carried.
	Attempt int
	// Answer is how it ended, in the driver's words (ack, nack,
	// dead-letter, poison, crash, ...; "" when it never ended), and Reason
	// the error the answer gave.
	Answer, Reason string
	// GaveUp: the consumer gave up on it by itself (a nack or a
	// dead-letter with no fault of the harness in the delivery).
	GaveUp bool
	// Account is the driver's one line on the delivery, read only for a
	// breach's detail (most runs break nothing: none is formatted).
	Account fmt.Stringer
}
