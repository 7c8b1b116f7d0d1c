package consumertest

import "slices"

// lawDocs say in one line what each law demands, for reports.
var lawDocs = map[string]string{
	LawRuns:            "the handler does not panic, leave a transaction open, hang outside the database, loop forever, or leave goroutines running",
	LawSingleCredit:    "no event's effect applied twice (per consumer group and event id)",
	LawNothingLost:     "once quiet, every healthy event has its effect exactly once or sits in the dead-letter queue",
	LawHealthyApplied:  "a healthy event ends applied, dead-lettered only when the harness's own faults spent every attempt; poison is dead-lettered, never applied",
	LawAtomicity:       "the dedupe records and the effects agree: effect and mark land together",
	LawReplay:          "replaying the whole stream leaves the effects of applied events unchanged",
	LawBoundedAttempts: "no message delivered more than max_attempts times; dead-letter entries carry attempts, last error and key",
}

// LawDoc says in one line what law demands ("" for a name that is not one
// of Laws).
func LawDoc(law string) string { return lawDocs[law] }

// Judged lists the laws c is judged by, in the order of Laws: all of them,
// but atomicity only when c has a Dedupe query.
func (c Consumer) Judged() []string {
	out := slices.Clone(Laws)
	if c.Dedupe == "" {
		out = slices.DeleteFunc(out, func(l string) bool { return l == LawAtomicity })
	}
	return out
}
