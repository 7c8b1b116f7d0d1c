package storetest

import (
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
	switch {
	case e.deletesFailed(): // Fail already deleted the failed record
	case e.keepsMark() && e.vanishes(): // its kept mark's lease ran out: gone
	default:
		left = append(left, failed)
	}
	if !e.vanishes() { // its lease long ran out: gone where expired leases vanish
		left = append(left, processing)
	}
	e.equal("records left by Cleanup", keysOf(e.records()), left)
	e.equal("ledger after Cleanup", e.ledger(), ledger)
}

// checkExpiryByLibrary: declared, the library removes a processed record
// itself once ExpiryMs have passed since its finishedAt, and Cleanup (there
// is no retention call) removes nothing; records in processing or failed
// are not its to expire, and the ledger stays. Catches an expiry early or
// late against the declared one, and a Cleanup that still deletes.
func checkExpiryByLibrary(e *env) {
	exp := e.conv.ExpiryMs
	done := key("done")
	e.settle(done, entry("ledger", "done", 1))
	failed := key("failed")
	c := e.acquire(failed)
	if err := e.fail(failed, c.Token, "transient"); err != nil {
		e.t.Fatalf("Fail: %v", err)
	}
	ledger := e.ledger()
	e.advance(exp - 1)
	before := e.snapshot()
	e.equal("Cleanup under the library's own expiry", e.cleanup(1), []store.Key(nil))
	e.unchanged("Cleanup under the library's own expiry", before)
	if _, ok := e.get(done); !ok {
		e.t.Errorf("record finished %dms ago is gone: the declared expiry is %dms", exp-1, exp)
	}
	e.advance(1)
	if r, ok := e.get(done); ok {
		e.t.Errorf("record finished %dms ago is still there: %+v, want it expired by the library", exp, r)
	}
	for _, r := range e.records() {
		if r.Key == done {
			e.t.Errorf("Records still lists %s after its expiry", done)
		}
	}
	if e.deletesFailed() || (e.keepsMark() && e.vanishes()) {
		if _, ok := e.get(failed); ok {
			e.t.Errorf("the failed record of %s is back", failed)
		}
	} else if _, ok := e.get(failed); !ok && !e.vanishes() {
		e.t.Errorf("the library expired the unsettled record of %s", failed)
	}
	e.equal("ledger after the expiry", e.ledger(), ledger)
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
