package law

import "github.com/idemcheck/idemcheck/impl/contract/broker"

// GroupKey names an event in a consumer group.
type GroupKey struct{ Group, Key string }

// Excused judges the dead-letter entries for HealthyApplied, for every
// judge that sees them (the reference world's and consumertest's): it
// returns the events the harness's own faults may have kept from being
// applied, those with an entry in dlq for spent attempts none of whose
// message's deliveries the consumer gave up on by itself. gaveUp reports
// whether it did on some delivery of the message at offset in group (a
// nack or a dead-letter with no fault of the harness in that delivery).
// Such an entry is the harness's doing, and the event is recoverable from
// it, whatever the consumer answered to the event's other copies (a
// duplicate refused while a crashed worker's claim still held it, say).
func Excused(dlq []broker.DLQEntry, gaveUp func(group string, offset int64) bool) map[GroupKey]bool {
	out := map[GroupKey]bool{}
	for _, e := range dlq {
		if !e.Poison && !gaveUp(e.Group, e.Offset) {
			out[GroupKey{e.Group, e.Key}] = true
		}
	}
	return out
}
