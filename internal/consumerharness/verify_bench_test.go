package consumerharness

import "testing"

// BenchmarkVerifySchedules is the search's speed on the ADR consumer:
// schedules played (each from a fresh database) per second.
func BenchmarkVerifySchedules(b *testing.B) {
	bounds := Bounds{Events: []Fate{FateOK}, Workers: 2, Preemptions: 2, Crashes: 1, Duplicates: 1}
	res, err := Explore(adrConsumer(), bounds, NoPOR(), NoCache(), VerifySchedules(int64(b.N)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(res.Schedules)/b.Elapsed().Seconds(), "schedules/s")
}

// BenchmarkVerifyADRDefault is a search of the ADR consumer with the
// default bounds, cut at b.N schedules.
func BenchmarkVerifyADRDefault(b *testing.B) {
	res, err := Explore(adrConsumer(), DefaultBounds, VerifySchedules(int64(b.N)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(res.Schedules)/b.Elapsed().Seconds(), "schedules/s")
}

// BenchmarkVerifyBalancePostgres is the search of a balance consumer on
// PostgreSQL (one event and its duplicate, the default bounds otherwise,
// one walker), cut at b.N schedules: what a schedule costs the harness,
// the scheduler and the driver (the server's share runs in its own
// processes).
func BenchmarkVerifyBalancePostgres(b *testing.B) {
	benchVerifyOneEvent(b, pgBalanceConsumer(), Postgres(pgDSN(b)))
}

// BenchmarkVerifyBalanceMySQL is BenchmarkVerifyBalancePostgres on MySQL
// or MariaDB.
func BenchmarkVerifyBalanceMySQL(b *testing.B) {
	benchVerifyOneEvent(b, myBalanceConsumer(), MySQL(myDSN(b)))
}

// benchVerifyOneEvent searches c's world of one event and its duplicate
// (the default bounds otherwise) on one walker and db, cut at b.N
// schedules, and reports the schedules per second.
func benchVerifyOneEvent(b *testing.B, c Consumer, db Option) {
	bounds := DefaultBounds
	bounds.Events = []Fate{FateOK}
	res, err := Explore(c, bounds, db, VerifyParallel(1), VerifySchedules(int64(b.N)))
	if err != nil {
		b.Fatal(err)
	}
	if !res.Verified && res.Schedules < int64(b.N) {
		b.Fatalf("%s", res.Report())
	}
	b.ReportMetric(float64(res.Schedules)/b.Elapsed().Seconds(), "schedules/s")
}
