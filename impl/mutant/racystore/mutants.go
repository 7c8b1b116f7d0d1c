package racystore

import (
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Mutant is one deliberately broken store.
type Mutant struct {
	// Name is the mutant's type name, which names its bug.
	Name string
	// Bug says in one sentence what is wrong.
	Bug string
	// New returns an empty store of this mutant over clock c.
	New func(c clock.Source) store.Store
}

// Mutants returns every mutant of this package, in a fixed order.
func Mutants() []Mutant {
	return []Mutant{
		{
			Name: "CheckThenActClaim",
			Bug:  "claim reads and writes the record in two steps without a lock across them: two acquirers",
			New:  func(c clock.Source) store.Store { return NewCheckThenActClaim(c) },
		},
		{
			Name: "TakeoverKeepsToken",
			Bug:  "a takeover keeps the expired holder's fencing token: tokens reused",
			New:  func(c clock.Source) store.Store { return NewTakeoverKeepsToken(c) },
		},
		{
			Name: "FailResetsToken",
			Bug:  "tokens are a per-record counter that Fail resets to zero: tokens decreasing",
			New:  func(c clock.Source) store.Store { return NewFailResetsToken(c) },
		},
		{
			Name: "LostCommit",
			Bug:  "commits land in a write-back cache that claims bypass and the flush drops: success reported, commit lost",
			New:  func(c clock.Source) store.Store { return NewLostCommit(c) },
		},
	}
}
