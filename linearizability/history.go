package linearizability

import (
	"cmp"
	"slices"

	"github.com/anishathalye/porcupine"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// History is a recorded concurrent history of the claim store.
type History struct {
	// Ops are sorted by Call.
	Ops []Op
	// Seed is the seed the operations were drawn from (0 for a history
	// built by hand).
	Seed uint64
	// Conventions are the store's declared conventions, which the check
	// holds it to (the zero value: the reference store's).
	Conventions store.Conventions
}

// Stats counts what a history exercised, so that a test can show it was not
// vacuous: a history without takeovers or stale commits proves little.
type Stats struct {
	// Ops, Keys and Clients are the history's size. Clients exceeds the
	// recorder's workers by one per ambiguous operation.
	Ops, Keys, Clients int
	// Acquired, Takeovers (acquired by taking an expired lease over),
	// Locked and Done (already processed) count the claims by answer.
	Acquired, Takeovers, Locked, Done int
	// Commits and Fails count those answered OK; Stale and NotHeld the
	// commits and fails rejected.
	Commits, Fails, Stale, NotHeld int
	// Reads counts answered reads.
	Reads int
	// Ambiguous counts operations that erred or timed out.
	Ambiguous int
}

// Stats counts the history's operations by outcome.
func (h History) Stats() Stats {
	var st Stats
	keys := map[store.Key]bool{}
	clients := map[int]bool{}
	for _, op := range h.Ops {
		st.Ops++
		keys[op.Input.Key] = true
		clients[op.Client] = true
		if op.Output.Ambiguous {
			st.Ambiguous++
			continue
		}
		switch op.Input.Kind {
		case Claim:
			switch op.Output.Claim.Outcome {
			case store.Acquired:
				st.Acquired++
				if op.Output.Claim.Takeover {
					st.Takeovers++
				}
			case store.Locked:
				st.Locked++
			case store.AlreadyProcessed:
				st.Done++
			}
		case Read:
			st.Reads++
		case Commit, Fail:
			switch op.Output.Answer {
			case OK:
				if op.Input.Kind == Commit {
					st.Commits++
				} else {
					st.Fails++
				}
			case Stale:
				st.Stale++
			case NotHeld:
				st.NotHeld++
			}
		}
	}
	st.Keys, st.Clients = len(keys), len(clients)
	return st
}

// Operations returns the history as porcupine operations, for Model.
func (h History) Operations() []porcupine.Operation {
	return toPorcupine(h.Ops)
}

func toPorcupine(ops []Op) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		out[i] = porcupine.Operation{
			ClientId: op.Client,
			Input:    op.Input,
			Call:     op.Call,
			Output:   op.Output,
			Return:   op.Return,
			Metadata: opMeta{key: op.Input.Key.String(), err: op.Output.Err},
		}
	}
	return out
}

// keyHistory is the part of a history on one key.
type keyHistory struct {
	key store.Key
	ops []Op
}

// byKey splits ops by key, keys sorted, each key's ops in the order given.
// The parts share one backing array, sized in a first pass: an Op is large,
// and growing a slice per key would copy the history several times over.
func byKey(ops []Op) []keyHistory {
	index := map[store.Key]int{}
	var counts []int
	for _, op := range ops {
		i, ok := index[op.Input.Key]
		if !ok {
			i = len(counts)
			index[op.Input.Key] = i
			counts = append(counts, 0)
		}
		counts[i]++
	}
	backing := make([]Op, len(ops))
	parts := make([]keyHistory, len(counts))
	start := 0
	for k, i := range index {
		parts[i] = keyHistory{key: k, ops: backing[start : start : start+counts[i]]}
		start += counts[i]
	}
	for _, op := range ops {
		i := index[op.Input.Key]
		parts[i].ops = append(parts[i].ops, op)
	}
	slices.SortFunc(parts, func(a, b keyHistory) int { return compareKeys(a.key, b.key) })
	return parts
}

func compareKeys(a, b store.Key) int {
	return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.ID, b.ID))
}
