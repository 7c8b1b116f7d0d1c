package linearizability

import (
	"github.com/anishathalye/porcupine"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// status is a key's record state in the model; absent is "no record".
type status uint8

const (
	absent status = iota
	processing
	processed
	failed
)

var statusNames = [...]store.State{absent: "", processing: store.Processing, processed: store.Processed, failed: store.Failed}

// keyState is the sequential specification's state of one key. Fields the
// history may not reveal (what an ambiguous operation did) carry a Known or
// Exact flag; the model then checks only what it knows, so that a correct
// store is never flagged for an outcome the model could not foresee.
type keyState struct {
	status   status
	attempts int
	// token is the record's current token while processing.
	token      uint64
	tokenKnown bool
	// maxToken is the greatest token seen issued for the key. A token issued
	// by an ambiguous claim is greater but unseen, so later tokens are only
	// required to exceed maxToken.
	maxToken uint64
	// leaseUntil is the lease's end while processing: exact, or, after an
	// ambiguous claim whose time is unknown, a lower bound.
	leaseUntil int64
	leaseExact bool
	// startedAt and finishedAt are the record's times while processing and
	// once processed, when known.
	startedAt     int64
	startedKnown  bool
	finishedAt    int64
	finishedKnown bool
	// nowLow is a lower bound of the store's time: the latest time the store
	// reported for this key. The store's clock never goes backwards, so every
	// later decision must report a time at or after it.
	nowLow int64
	// credited is set once a commit with a credit took effect: the ledger
	// then holds the key's entry.
	credited bool
}

// states is the model's state: the set of key states the operations so far
// may have left. It has one element unless an ambiguous operation left the
// model unsure whether it took effect.
type states []keyState

// Model returns the porcupine model of the claim store's sequential
// specification, partitioned by key, under the reference conventions.
// Inputs are Input and outputs Output.
func Model() porcupine.Model { return ModelFor(store.Conventions{}) }

// ModelFor is Model for a store that declares conv: where correct stores
// legitimately differ, the specification follows the declaration.
func ModelFor(conv store.Conventions) porcupine.Model {
	sp := spec{conv}
	return porcupine.Model{
		Partition:                 partitionOps,
		Init:                      func() any { return states{{}} },
		Step:                      sp.step,
		Equal:                     equalStates,
		DescribeOperation:         describeOperation,
		DescribeState:             describeState,
		DescribeOperationMetadata: describeMetadata,
	}
}

// partitionOps splits a porcupine history by key: operations on different
// keys never constrain each other, so each key is checked alone.
func partitionOps(history []porcupine.Operation) [][]porcupine.Operation {
	index := map[store.Key]int{}
	var parts [][]porcupine.Operation
	for _, op := range history {
		k := op.Input.(Input).Key
		i, ok := index[k]
		if !ok {
			i = len(parts)
			index[k] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

// spec is the sequential specification under one set of conventions.
type spec struct{ conv store.Conventions }

func (sp spec) step(state, input, output any) (bool, any) {
	set := state.(states)
	in := input.(Input)
	out := output.(Output)
	if len(set) == 1 && !out.Ambiguous {
		// The common case, without the set's bookkeeping.
		ok, next := sp.stepDefinite(set[0], in, out)
		if !ok {
			return false, nil
		}
		return true, states{next}
	}
	var next states
	for _, s := range set {
		if out.Ambiguous {
			for _, n := range sp.stepAmbiguous(s, in) {
				next = next.add(n)
			}
			continue
		}
		if ok, n := sp.stepDefinite(s, in, out); ok {
			next = next.add(n)
		}
	}
	return len(next) > 0, next
}

func (set states) add(s keyState) states {
	for _, t := range set {
		if t == s {
			return set
		}
	}
	return append(set, s)
}

func equalStates(a, b any) bool {
	x, y := a.(states), b.(states)
	if len(x) != len(y) {
		return false
	}
	for _, s := range x {
		found := false
		for _, t := range y {
			if s == t {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// stepDefinite is the sequential specification of an operation whose answer
// is known: whether s allows it, and the state after it.
func (sp spec) stepDefinite(s keyState, in Input, out Output) (bool, keyState) {
	switch in.Kind {
	case Claim:
		return sp.stepClaim(s, in, out.Claim)
	case Commit:
		return sp.stepCommit(s, in, out)
	case Fail:
		return sp.stepFail(s, in, out)
	case Read:
		return sp.stepRead(s, in, out)
	}
	return false, s
}

// heldBy tells whether the record is in processing under token, as far as
// the model knows. A current token the model does not know was issued by an
// ambiguous claim after every token a client saw, so it is nobody's.
func (s keyState) heldBy(token uint64) bool {
	return s.status == processing && s.tokenKnown && s.token == token
}

func (sp spec) stepClaim(s keyState, in Input, c store.Claim) (bool, keyState) {
	if c.AtMs < s.nowLow {
		return false, s
	}
	var allowed bool
	switch s.status {
	case processed:
		allowed = c.Outcome == store.AlreadyProcessed
	case processing:
		expired := !sp.conv.LeaseHolds(c.AtMs, s.leaseUntil)
		switch {
		case !expired:
			allowed = c.Outcome == sp.conv.BusyOutcome()
		case s.leaseExact:
			allowed = c.Outcome == store.Acquired
		default:
			// leaseUntil is only a lower bound: the lease may or may not
			// have run out by c.AtMs.
			allowed = c.Outcome == store.Acquired || c.Outcome == sp.conv.BusyOutcome()
		}
	default:
		allowed = c.Outcome == store.Acquired
	}
	if !allowed {
		return false, s
	}
	next := s
	next.nowLow = c.AtMs
	if c.Outcome != store.Acquired {
		return true, next
	}
	if c.Attempt != s.attempts+1 || c.Token <= s.maxToken || c.Takeover != (s.status == processing) {
		return false, s
	}
	next.status = processing
	next.attempts = c.Attempt
	next.token, next.tokenKnown = c.Token, true
	next.maxToken = c.Token
	next.leaseUntil, next.leaseExact = c.AtMs+in.LeaseMs, true
	next.startedAt, next.startedKnown = c.AtMs, true
	return true, next
}

func (sp spec) stepCommit(s keyState, in Input, out Output) (bool, keyState) {
	switch out.Answer {
	case OK:
		res := out.Commit
		if !s.heldBy(in.Token) || res.AtMs < s.nowLow {
			return false, s
		}
		want := store.CommitResult{AtMs: res.AtMs}
		switch {
		case in.Credit && s.credited:
			want.DuplicatesIgnored = 1
		case in.Credit:
			want.Credited = 1
		}
		if res != want {
			return false, s
		}
		next := s.committed()
		next.finishedAt, next.finishedKnown = res.AtMs, true
		next.nowLow = res.AtMs
		next.credited = s.credited || in.Credit
		return true, next
	case Stale:
		return s.status == processing && !s.heldBy(in.Token), s
	case NotHeld:
		return s.status != processing, s
	}
	return false, s
}

// committed is s after a commit took effect, with its time still unset.
func (s keyState) committed() keyState {
	s.status = processed
	s.token, s.tokenKnown = 0, false
	s.leaseUntil, s.leaseExact = 0, false
	s.finishedAt, s.finishedKnown = 0, false
	return s
}

func (sp spec) stepFail(s keyState, in Input, out Output) (bool, keyState) {
	switch out.Answer {
	case OK:
		if !s.heldBy(in.Token) {
			// A silent no-op release is allowed only by its convention,
			// and must change nothing.
			return sp.conv.StaleRelease == store.StaleReleaseNoOp, s
		}
		return true, sp.failed(s)
	case Stale:
		return s.status == processing && !s.heldBy(in.Token), s
	case NotHeld:
		return s.status != processing, s
	}
	return false, s
}

// failed is s after a fail took effect: a failed record, or none at all
// when the store deletes a failed attempt's record — attempts then start
// again, but tokens must still exceed every one issued (maxToken stays).
func (sp spec) failed(s keyState) keyState {
	s.status = failed
	s.token, s.tokenKnown = 0, false
	s.leaseUntil, s.leaseExact = 0, false
	if sp.conv.FailedAttempt == store.FailedAttemptDeleted {
		s.status, s.attempts = absent, 0
		s.startedAt, s.startedKnown = 0, false
	}
	return s
}

// stepRead checks a read against what the model knows, and learns from it
// what an ambiguous claim or commit left unknown. Fields the contract leaves
// to the implementation (the token of a settled record, the last error) are
// not checked.
func (sp spec) stepRead(s keyState, in Input, out Output) (bool, keyState) {
	if s.status == absent {
		return !out.Found, s
	}
	r := out.Record
	if !out.Found || r.Key != in.Key || r.State != statusNames[s.status] || r.Attempts != s.attempts {
		return false, s
	}
	next := s
	switch s.status {
	case processing:
		if s.tokenKnown && r.Token != s.token || !s.tokenKnown && r.Token <= s.maxToken {
			return false, s
		}
		if s.leaseExact && r.LeaseUntilMs != s.leaseUntil || !s.leaseExact && r.LeaseUntilMs < s.leaseUntil {
			return false, s
		}
		if s.startedKnown && r.StartedAtMs != s.startedAt {
			return false, s
		}
		next.token, next.tokenKnown = r.Token, true
		next.maxToken = max(s.maxToken, r.Token)
		next.leaseUntil, next.leaseExact = r.LeaseUntilMs, true
		next.startedAt, next.startedKnown = r.StartedAtMs, true
	case processed:
		if s.finishedKnown && r.FinishedAtMs != s.finishedAt {
			return false, s
		}
		next.finishedAt, next.finishedKnown = r.FinishedAtMs, true
	}
	return true, next
}

// stepAmbiguous returns every state an operation with an unknown outcome may
// have left: unchanged (it never reached the store, or changed nothing), or
// changed as it would have been with each outcome the state allows, with
// what the answer would have told (a token, a time) left unknown.
func (sp spec) stepAmbiguous(s keyState, in Input) []keyState {
	out := []keyState{s}
	switch in.Kind {
	case Claim:
		switch s.status {
		case absent, failed:
			out = append(out, s.acquiredUnseen(in, s.nowLow))
		case processing:
			// A takeover happened at or after the lease's end, so the store's
			// time is now at least that.
			out = append(out, s.acquiredUnseen(in, max(s.nowLow, s.leaseUntil)))
		}
	case Commit:
		if s.heldBy(in.Token) {
			next := s.committed()
			next.credited = s.credited || in.Credit
			out = append(out, next)
		}
	case Fail:
		if s.heldBy(in.Token) {
			out = append(out, sp.failed(s))
		}
	}
	return out
}

// acquiredUnseen is s after a claim whose answer nobody saw acquired it at a
// store time of at least now.
func (s keyState) acquiredUnseen(in Input, now int64) keyState {
	s.status = processing
	s.attempts++
	s.token, s.tokenKnown = 0, false
	s.leaseUntil, s.leaseExact = now+in.LeaseMs, false
	s.startedAt, s.startedKnown = 0, false
	s.nowLow = now
	return s
}
