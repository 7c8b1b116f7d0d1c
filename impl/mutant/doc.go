// Package mutant holds the deliberately broken parts: each is a realistic bug,
// registered in impl/system under a kebab-case name (no-dedup,
// max-attempts-off-by-one, ...) and named here by the CamelCase of the same
// words (NoDedup, NewMaxAttemptsOffByOne, ...).
//
// Every mutant is made the same way: it implements the contract of the part
// it replaces (impl/contract/...) by wrapping the reference part and changing
// the one behaviour its name says, or — for consumers — as a pipeline
// composed from the reference consumer's public stages and stages of its own.
// Naive consumer code writes through store.Tables, the statement-level access
// a database gives, the way such code is written against a real one. Nothing
// here reaches into a reference part's internals, so a mutant differs from
// the reference in its named bug only, and a check that flags it has caught
// that bug.
package mutant
