package linearizability

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

var k1 = store.Key{Tenant: "acme", Consumer: "ledger", ID: "evt-1"}

// Builders of hand-made operations on k1: client, call and return stamps,
// then the call's arguments and the answer.

func claimOp(client int, call, ret, lease int64, c store.Claim) Op {
	return Op{Client: client, Call: call, Return: ret,
		Input: Input{Kind: Claim, Key: k1, LeaseMs: lease}, Output: Output{Claim: c}}
}

func acquired(tok uint64, attempt int, at int64, takeover bool) store.Claim {
	return store.Claim{Outcome: store.Acquired, Token: tok, Attempt: attempt, Takeover: takeover, AtMs: at}
}

func locked(at int64) store.Claim { return store.Claim{Outcome: store.Locked, AtMs: at} }

func done(at int64) store.Claim { return store.Claim{Outcome: store.AlreadyProcessed, AtMs: at} }

func commitOp(client int, call, ret int64, tok uint64, a Answer, at int64) Op {
	out := Output{Answer: a}
	if a == OK {
		out.Commit = store.CommitResult{Credited: 1, AtMs: at}
	}
	return Op{Client: client, Call: call, Return: ret,
		Input: Input{Kind: Commit, Key: k1, Token: tok, Credit: true}, Output: out}
}

func failOp(client int, call, ret int64, tok uint64, a Answer) Op {
	return Op{Client: client, Call: call, Return: ret,
		Input: Input{Kind: Fail, Key: k1, Token: tok}, Output: Output{Answer: a}}
}

func readOp(client int, call, ret int64, r *store.Record) Op {
	out := Output{}
	if r != nil {
		out.Found, out.Record = true, *r
	}
	return Op{Client: client, Call: call, Return: ret, Input: Input{Kind: Read, Key: k1}, Output: out}
}

// unanswered makes op ambiguous: it never returned.
func unanswered(op Op) Op {
	op.Output = Output{Ambiguous: true, Err: "context deadline exceeded"}
	op.Return = Never
	return op
}

func history(ops ...Op) History { return History{Ops: ops} }

// TestModel checks the sequential specification on small hand-made
// histories, each a rule of the contract kept or broken.
func TestModel(t *testing.T) {
	processingRec := &store.Record{Key: k1, State: store.Processing, Attempts: 1, Token: 1, StartedAtMs: 100, LeaseUntilMs: 110}
	tests := []struct {
		name string
		h    History
		want Verdict
	}{
		{"empty", history(), Linearizable},
		{"lifecycle", history(
			readOp(0, 1, 2, nil),
			claimOp(0, 3, 4, 10, acquired(1, 1, 100, false)),
			readOp(1, 5, 6, processingRec),
			claimOp(1, 7, 8, 10, locked(105)),
			failOp(0, 9, 10, 1, OK),
			claimOp(1, 11, 12, 10, acquired(2, 2, 106, false)),
			commitOp(0, 13, 14, 1, Stale, 0),
			commitOp(1, 15, 16, 2, OK, 107),
			claimOp(0, 17, 18, 10, done(108)),
			commitOp(0, 19, 20, 2, NotHeld, 0),
			readOp(0, 21, 22, &store.Record{Key: k1, State: store.Processed, Attempts: 2, StartedAtMs: 106, FinishedAtMs: 107}),
		), Linearizable},
		{"concurrent claims, the locked one called first", history(
			claimOp(0, 1, 4, 10, locked(100)),
			claimOp(1, 2, 3, 10, acquired(1, 1, 100, false)),
		), Linearizable},
		{"two acquirers", history(
			claimOp(0, 1, 4, 10, acquired(1, 1, 100, false)),
			claimOp(1, 2, 3, 10, acquired(2, 1, 100, false)),
		), Violation},
		{"takeover after the lease ran out", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			claimOp(1, 3, 4, 10, acquired(2, 2, 110, true)),
			commitOp(0, 5, 6, 1, Stale, 0),
		), Linearizable},
		{"takeover before the lease ran out", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			claimOp(1, 3, 4, 10, acquired(2, 2, 109, true)),
		), Violation},
		{"locked after the lease ran out", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			claimOp(1, 3, 4, 10, locked(110)),
		), Violation},
		{"takeover reuses the token", history(
			claimOp(0, 1, 2, 10, acquired(5, 1, 100, false)),
			claimOp(1, 3, 4, 10, acquired(5, 2, 120, true)),
		), Violation},
		{"token decreases after a fail", history(
			claimOp(0, 1, 2, 10, acquired(5, 1, 100, false)),
			failOp(0, 3, 4, 5, OK),
			claimOp(1, 5, 6, 10, acquired(3, 2, 101, false)),
		), Violation},
		{"attempt skipped", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			failOp(0, 3, 4, 1, OK),
			claimOp(1, 5, 6, 10, acquired(2, 3, 101, false)),
		), Violation},
		{"takeover not reported as one", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			claimOp(1, 3, 4, 10, acquired(2, 2, 120, false)),
		), Violation},
		{"store time goes backwards", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			claimOp(1, 3, 4, 10, locked(99)),
		), Violation},
		{"commit reported then lost", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			commitOp(0, 3, 4, 1, OK, 101),
			claimOp(1, 5, 6, 10, locked(102)),
		), Violation},
		{"stale commit lands", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			claimOp(1, 3, 4, 10, acquired(2, 2, 110, true)),
			commitOp(0, 5, 6, 1, OK, 111),
		), Violation},
		{"holder's commit rejected as stale", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			commitOp(0, 3, 4, 1, Stale, 0),
		), Violation},
		{"not held while processing", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			failOp(1, 3, 4, 9, NotHeld),
		), Violation},
		{"commit credits twice", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			func() Op {
				op := commitOp(0, 3, 4, 1, OK, 101)
				op.Output.Commit.Credited = 2
				return op
			}(),
		), Violation},
		{"read shows the wrong token", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			readOp(1, 3, 4, &store.Record{Key: k1, State: store.Processing, Attempts: 1, Token: 2, StartedAtMs: 100, LeaseUntilMs: 110}),
		), Violation},
		{"read misses a commit", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			commitOp(0, 3, 4, 1, OK, 101),
			readOp(1, 5, 6, processingRec),
		), Violation},
		// Ambiguous operations: an outcome nobody saw may explain what
		// follows, but only if the state allowed it.
		{"unanswered claim explains a later takeover", history(
			unanswered(claimOp(0, 1, 0, 10, store.Claim{})),
			claimOp(1, 3, 4, 10, acquired(7, 2, 150, true)),
		), Linearizable},
		{"unanswered claim lands after others saw the key free", history(
			unanswered(claimOp(0, 1, 0, 10, store.Claim{})),
			readOp(1, 2, 3, nil),
			claimOp(1, 4, 5, 10, acquired(3, 1, 100, false)),
			failOp(1, 6, 7, 3, OK),
			claimOp(1, 8, 9, 10, locked(101)),
			readOp(1, 10, 11, &store.Record{Key: k1, State: store.Processing, Attempts: 2, Token: 4, StartedAtMs: 101, LeaseUntilMs: 111}),
		), Linearizable},
		{"unanswered claim cannot take over a live lease", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			unanswered(claimOp(1, 3, 0, 10, store.Claim{})),
			claimOp(2, 4, 5, 10, acquired(3, 3, 105, true)),
		), Violation},
		{"unanswered commit explains processed", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			unanswered(commitOp(0, 3, 0, 1, OK, 0)),
			claimOp(1, 4, 5, 10, done(120)),
			readOp(1, 6, 7, &store.Record{Key: k1, State: store.Processed, Attempts: 1, StartedAtMs: 100, FinishedAtMs: 103}),
		), Linearizable},
		{"unanswered stale commit cannot explain processed", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			claimOp(1, 3, 4, 10, acquired(2, 2, 110, true)),
			unanswered(commitOp(0, 5, 0, 1, OK, 0)),
			claimOp(2, 6, 7, 10, done(111)),
		), Violation},
		{"unanswered fail frees the key", history(
			claimOp(0, 1, 2, 10, acquired(1, 1, 100, false)),
			unanswered(failOp(0, 3, 0, 1, OK)),
			claimOp(1, 4, 5, 10, acquired(2, 2, 101, false)),
		), Linearizable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.h, 10*time.Second)
			if r.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s: %s\n%v", r.Verdict, tc.want, r, r.Explanations)
			}
		})
	}
}

// TestModelPartitionsByKey shows keys are independent: the same two
// acquisitions are legal when they are of two consumers' keys.
func TestModelPartitionsByKey(t *testing.T) {
	a := claimOp(0, 1, 4, 10, acquired(1, 1, 100, false))
	b := claimOp(1, 2, 3, 10, acquired(2, 1, 100, false))
	b.Input.Key.Consumer = "email"
	if r := Check(history(a, b), 10*time.Second); r.Verdict != Linearizable || r.Keys != 2 {
		t.Fatalf("%s", r)
	}
}
