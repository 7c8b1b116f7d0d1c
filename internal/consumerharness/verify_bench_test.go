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
