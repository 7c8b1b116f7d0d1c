package storetest

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// checkCleanupByStoreTime: Cleanup deletes exactly the processed records
// whose finishedAt is at or before the store's time minus the retention,
// returns their keys sorted, never touches a record in processing (even
// with its lease long run out) or failed, and leaves the ledger alone.
// Catches an exclusive cutoff, a cleanup of unsettled records (a redelivery
// would then process the event again), an unsorted answer, and a cleanup
// that deletes ledger entries.
func checkCleanupByStoreTime(e *env) {
	if e.libraryExpiry() {
		checkExpiryByLibrary(e)
		return
	}
	// Settled at startMs, in an order that is not the sorted one.
	old := []store.Key{
		{Tenant: "t2", Consumer: "ledger", ID: "a"},
		{Tenant: "t1", Consumer: "ledger", ID: "b"},
		{Tenant: "t1", Consumer: "email", ID: "c"},
		{Tenant: "", Consumer: "ledger", ID: "z"},
	}
	for _, k := range old {
		e.settle(k, entry(k.Consumer, k.Tenant+k.ID, 1))
	}
	processing := key("processing")
	e.acquire(processing)
	failed := key("failed")
	c := e.acquire(failed)
	if err := e.fail(failed, c.Token, "transient"); err != nil {
		e.t.Fatalf("Fail: %v", err)
	}
	e.advance(100)
	recent := key("recent") // finished at startMs+100
	e.settle(recent, entry("ledger", "recent", 1))
	ledger := e.ledger()

	e.advance(retentionMs - 50) // cutoff startMs+50: the old ones only
	sorted := []store.Key{old[3], old[2], old[1], old[0]}
	e.equal("Cleanup at startMs+retention+50", e.cleanup(retentionMs), sorted)
	for _, k := range old {
		if r, ok := e.get(k); ok {
			e.t.Errorf("record of %s survived Cleanup: %+v", k, r)
		}
	}
	if _, ok := e.get(recent); !ok {
		e.t.Errorf("record finished 50 ms after the cutoff was deleted")
	}

	e.advance(50) // cutoff startMs+100: exactly recent's finishedAt
	e.equal("Cleanup with the cutoff at finishedAt", e.cleanup(retentionMs), []store.Key{recent})

	e.advance(100 * retentionMs)
	e.equal("Cleanup long after", e.cleanup(retentionMs), []store.Key(nil))
	var left []store.Key
	if e.failedLeft(startMs) {
		left = append(left, failed)
	}
	if !e.conv.UnsettledGone(store.Processing, startMs, e.leaseUntil(startMs), e.now()) {
		left = append(left, processing) // its lease long ran out, but nothing removes it
	}
	e.equal("records left by Cleanup", keysOf(e.records()), left)
	e.equal("ledger after Cleanup", e.ledger(), ledger)
}

// failedLeft says whether the record of a key claimed at claimedAtMs and
// failed at once is still there now: not deleted by Fail (FailedAttempt
// deleted), and not removed by time — a kept mark once its hold ended,
// where such records vanish, or any unsettled record past its own expiry.
func (e *env) failedLeft(claimedAtMs int64) bool {
	if e.deletesFailed() {
		return false
	}
	state := store.Failed
	if e.keepsMark() {
		state = store.Processing // Fail kept the mark
	}
	return !e.conv.UnsettledGone(state, claimedAtMs, e.leaseUntil(claimedAtMs), e.now())
}

// checkExpiryByLibrary: declared, the library removes a processed record
// itself: it is there until ExpiryMs have passed since the instant its
// expiry counts from (its commit, or under ExpiryFromClaim the claim of
// the attempt that settled it), and gone once ExpiryLatest has (ExpiryMs
// again, unless the removal is declared a range); Cleanup (there is no
// retention call) removes nothing. Records in processing or failed are
// not its to expire (but by their own expiry, UnsettledExpiryMs), and the
// ledger stays. Keys settle some time after their claim, at instants
// spread over a whole ExpiryMs (a sweep's phase shows on some of them),
// and one is claimed, released and claimed again before it settles.
// Catches an expiry early or late against the declared one, counted from
// the commit where the claim is declared or the other way round, counted
// from a key's first claim rather than from the attempt that settled it,
// and a Cleanup that still deletes.
func checkExpiryByLibrary(e *env) {
	failed := key("failed")
	failedAt := e.now()
	c := e.acquire(failed)
	if err := e.fail(failed, c.Token, "transient"); err != nil {
		e.t.Fatalf("Fail: %v", err)
	}

	var settled []settledKey
	var ledger []store.Entry
	// settle commits k under claim c; its expiry counts from the claim or
	// the commit, as the rule saw them (not as the record says).
	settle := func(k store.Key, c store.Claim) {
		e.t.Helper()
		res := e.mustCommit(k, c.Token, entry("ledger", k.ID, 1))
		settled = append(settled, settledKey{k, e.conv.ExpiryStartMs(c.AtMs, res.AtMs)})
		ledger = append(ledger, entry("ledger", k.ID, 1))
	}
	retried := key("retried")
	c = e.acquire(retried)
	if err := e.fail(retried, c.Token, "transient"); err != nil {
		e.t.Fatalf("Fail: %v", err)
	}
	if e.keepsMark() {
		e.advance(e.hold()) // the failed attempt's mark stays until then
	} else {
		e.advance(e.briefly(7))
	}
	c = e.acquire(retried)
	e.advance(e.briefly(3))
	settle(retried, c)

	const spread = 16
	step := max(e.conv.ExpiryMs/spread, 1)
	for i := range min(spread, e.conv.ExpiryMs) {
		k := key(fmt.Sprintf("done-%02d", i))
		c := e.acquire(k)
		took := e.briefly(7)
		e.advance(took)
		settle(k, c)
		e.advance(max(step-took, 0))
	}
	e.expireAsDeclared(settled)

	if _, ok := e.get(failed); ok != e.failedLeft(failedAt) {
		if ok {
			e.t.Errorf("the failed record of %s is still there, but it is declared gone by now", failed)
		} else {
			e.t.Errorf("the failed record of %s is gone: only its own declared expiry (UnsettledExpiryMs) may remove it", failed)
		}
	}
	slices.SortFunc(ledger, func(a, b store.Entry) int { return cmp.Compare(a.EventID, b.EventID) })
	e.equal("ledger after the expiry", e.ledger(), ledger)
}

// settledKey is a key just settled, and the instant its expiry counts
// from.
type settledKey struct {
	k    store.Key
	from int64
}

// expireAsDeclared checks, moving time forward, that the library keeps
// the settled record of each key until its declared expiry and has
// removed it by its latest, and that Cleanup removes nothing meanwhile.
func (e *env) expireAsDeclared(keys []settledKey) {
	e.t.Helper()
	since := "finished"
	if e.conv.ExpiryFrom == store.ExpiryFromClaim {
		since = "was claimed for the attempt that settled it"
	}
	type point struct {
		at   int64
		k    store.Key
		from int64
		gone bool
	}
	var points []point
	for _, s := range keys {
		points = append(points, point{s.from + e.conv.ExpiryMs - 1, s.k, s.from, false}, point{s.from + e.conv.ExpiryLatest(), s.k, s.from, true})
	}
	slices.SortStableFunc(points, func(a, b point) int { return cmp.Compare(a.at, b.at) })
	for _, p := range points {
		e.advance(max(p.at-e.now(), 0))
		if !p.gone {
			before := e.snapshot()
			e.equal("Cleanup under the library's own expiry", e.cleanup(1), []store.Key(nil))
			e.unchanged("Cleanup under the library's own expiry", before)
			if _, ok := e.get(p.k); !ok && e.now() < p.from+e.conv.ExpiryMs {
				e.t.Errorf("record of %s, which %s %dms ago, is gone: the declared expiry is %dms", p.k, since, e.now()-p.from, e.conv.ExpiryMs)
			}
			continue
		}
		if r, ok := e.get(p.k); ok {
			e.t.Errorf("record of %s, which %s %dms ago, is still there: %+v, want it removed by the library by then (declared: by %dms)", p.k, since, e.now()-p.from, r, e.conv.ExpiryLatest())
		}
		for _, r := range e.records() {
			if r.Key == p.k {
				e.t.Errorf("Records still lists %s after its expiry", p.k)
			}
		}
	}
}

// checkRecordsSortedByKey: Records returns every record sorted by (Tenant,
// Consumer, ID), comparing bytes. Catches insertion or hash order, sorting
// by the concatenated Key.String(), and a database collation that ignores
// case.
func checkRecordsSortedByKey(e *env) {
	inserted := []store.Key{
		{Tenant: "t", Consumer: "b/", ID: "a"},
		{Tenant: "t", Consumer: "b", ID: "z"},
		{Tenant: "T", Consumer: "x", ID: "x"},
		{Tenant: "t", Consumer: "B", ID: "q"},
		{Tenant: "", Consumer: "z", ID: "z"},
	}
	for _, k := range inserted {
		e.acquire(k)
	}
	e.equal("Records order", keysOf(e.records()), []store.Key{inserted[4], inserted[2], inserted[3], inserted[1], inserted[0]})
}

// checkLedgerSortedByConsumerEvent: Ledger returns every entry sorted by
// (Consumer, EventID), comparing bytes. Catches insertion order, sorting by
// the event alone, and a case-folding collation.
func checkLedgerSortedByConsumerEvent(e *env) {
	e.settle(key("l"), entry("ledger", "e2", 1), entry("ledger", "E1", 2), entry("ledger", "e10", 3))
	e.settle(store.Key{Tenant: "t1", Consumer: "email", ID: "m"}, entry("email", "e9", 4))
	e.equal("Ledger order", e.ledger(), []store.Entry{
		entry("email", "e9", 4), entry("ledger", "E1", 2), entry("ledger", "e10", 3), entry("ledger", "e2", 1),
	})
}

func keysOf(rs []store.Record) []store.Key {
	keys := make([]store.Key, len(rs))
	for i, r := range rs {
		keys[i] = r.Key
	}
	return keys
}
