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
	if len(set) == 1 && !out.Ambiguous && !sp.expires() {
		// The common case, without the set's bookkeeping.
		ok, next := sp.stepDefinite(set[0], in, out)
		if !ok {
			return false, nil
		}
		return true, states{next}
	}
	var next states
	for _, s0 := range set {
		for _, s := range sp.candidates(s0, in, out) {
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
	}
	return len(next) > 0, next
}

// expires reports whether records may disappear by time alone under the
// conventions: processed ones by the library's expiry, unsettled ones by
// their own, expired leases where they vanish.
func (sp spec) expires() bool {
	return sp.conv.Expiry == store.ExpiryByLibrary || sp.conv.ExpiredLease == store.ExpiredLeaseVanishes || sp.conv.UnsettledExpiryMs > 0
}

// candidates are the states s may be in when the operation takes effect:
// s itself, or — where records disappear by time — s with the record
// gone. A claim or a commit that succeeded tells its time, and with it
// which; any other operation happened at some time after everything the
// key reported before.
func (sp spec) candidates(s keyState, in Input, out Output) []keyState {
	if !sp.expires() {
		return []keyState{s}
	}
	var at int64
	known := false
	switch {
	case out.Ambiguous:
	case in.Kind == Claim:
		at, known = out.Claim.AtMs, true
	case in.Kind == Commit && out.Answer == OK:
		at, known = out.Commit.AtMs, true
	}
	gone, surely := sp.goneBy(s, at, known)
	switch {
	case !gone:
		return []keyState{s}
	case surely:
		return []keyState{s.vanished()}
	}
	return []keyState{s, s.vanished()}
}

// goneBy reports whether s's record may be gone by time at (when known;
// otherwise by some time at or after nowLow), and whether it surely is.
func (sp spec) goneBy(s keyState, at int64, known bool) (may, surely bool) {
	switch s.status {
	case processed:
		if sp.conv.Expiry != store.ExpiryByLibrary {
			return false, false
		}
		from, fromKnown := s.finishedAt, s.finishedKnown
		if sp.conv.ExpiryFrom == store.ExpiryFromClaim {
			from, fromKnown = s.startedAt, s.startedKnown
		}
		if !fromKnown {
			return true, false
		}
		if known {
			return sp.conv.MayHaveExpired(from, at), sp.conv.MustHaveExpired(from, at)
		}
		return true, sp.conv.MustHaveExpired(from, s.nowLow)
	case processing, failed:
		// Its own expiry, counted from its claim (exact, or unknown after
		// an ambiguous claim).
		if sp.conv.UnsettledExpiryMs > 0 {
			switch {
			case !s.startedKnown:
				may = true
			case known:
				may = at >= s.startedAt+sp.conv.UnsettledExpiryMs
				surely = may
			default:
				may, surely = true, s.nowLow >= s.startedAt+sp.conv.UnsettledExpiryMs
			}
		}
		if s.status == processing && sp.conv.ExpiredLease == store.ExpiredLeaseVanishes {
			// leaseUntil is exact, or a lower bound of the lease's end.
			if known {
				ran := !sp.conv.LeaseHolds(at, s.leaseUntil)
				may, surely = may || ran, surely || ran && s.leaseExact
			} else {
				may, surely = true, surely || s.leaseExact && !sp.conv.LeaseHolds(s.nowLow, s.leaseUntil)
			}
		}
		return may, surely
	}
	return false, false
}

// vanished is s once its record disappeared: no record, attempts counted
// afresh; the tokens issued and the ledger stay.
func (s keyState) vanished() keyState {
	return keyState{maxToken: s.maxToken, nowLow: s.nowLow, credited: s.credited}
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
		case sp.conv.Lease == store.LeaseNone:
			// A mark with no lease holds until its own expiry takes it
			// away (candidates): never taken over.
			allowed = c.Outcome == sp.conv.BusyOutcome()
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
	next.leaseUntil, next.leaseExact = sp.conv.LeaseUntilMs(c.AtMs, in.LeaseMs), true
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
		if sp.conv.LateCommit == store.LateCommitRefused && s.leaseExact && !sp.conv.LeaseHolds(res.AtMs, s.leaseUntil) {
			return false, s // declared refused once the lease ran out
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
	case Stale, NotHeld:
		// A holder whose lease may have run out by the commit's (unknown)
		// time is refused where late commits are.
		late := sp.conv.LateCommit == store.LateCommitRefused && s.heldBy(in.Token)
		return late || sp.refused(s, in, out.Answer), s
	}
	return false, s
}

// refused reports whether answer is a right refusal of a caller with
// in.Token in state s: stale while another holds the claim, not held when
// nobody does — or either, for a store with one error for both.
func (sp spec) refused(s keyState, in Input, answer Answer) bool {
	stale := s.status == processing && !s.heldBy(in.Token)
	notHeld := s.status != processing
	if sp.conv.Refusal == store.RefusalOneError {
		return stale || notHeld
	}
	if answer == Stale {
		return stale
	}
	return notHeld
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
	case Stale, NotHeld:
		return sp.refused(s, in, out.Answer), s
	}
	return false, s
}

// failed is s after a fail took effect: a failed record, or none at all
// when the store deletes a failed attempt's record — attempts then start
// again, but tokens must still exceed every one issued (maxToken stays).
func (sp spec) failed(s keyState) keyState {
	if sp.conv.FailedAttempt == store.FailedAttemptKeptMark {
		return s // the mark stays in processing until its lease runs out
	}
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
		if sp.conv.ExpiryFrom == store.ExpiryFromClaim {
			// The library's expiry counts from the claim: the record's
			// start is part of what the model must know.
			if s.startedKnown && r.StartedAtMs != s.startedAt {
				return false, s
			}
			next.startedAt, next.startedKnown = r.StartedAtMs, true
		}
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
			out = append(out, sp.acquiredUnseen(s, in, s.nowLow))
		case processing:
			if sp.conv.Lease == store.LeaseNone {
				break // never taken over; gone by its own expiry instead (candidates)
			}
			// A takeover happened at or after the lease's end, so the store's
			// time is now at least that.
			out = append(out, sp.acquiredUnseen(s, in, max(s.nowLow, s.leaseUntil)))
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
func (sp spec) acquiredUnseen(s keyState, in Input, now int64) keyState {
	s.status = processing
	s.attempts++
	s.token, s.tokenKnown = 0, false
	s.leaseUntil, s.leaseExact = now+in.LeaseMs, false
	if sp.conv.Lease == store.LeaseNone {
		s.leaseUntil, s.leaseExact = 0, true // a mark with no lease shows none
	}
	s.startedAt, s.startedKnown = 0, false
	s.nowLow = now
	return s
}
