package consumerharness

import (
	"database/sql/driver"
	"slices"
	"testing"
	"time"
)

func TestTheConsumersWindowsAreReadFromItsStatements(t *testing.T) {
	for q, want := range map[string]time.Duration{
		"DELETE FROM keys WHERE at < datetime('now', '-10 seconds')":            10 * time.Second,
		"DELETE FROM keys WHERE at < now() - interval '30 days'":                30 * 24 * time.Hour,
		"SELECT 1 WHERE x > now() - '1 hour 30 minutes'::interval":              90 * time.Minute,
		"DELETE FROM keys WHERE at < NOW() - INTERVAL 5 MINUTE":                 5 * time.Minute,
		"INSERT INTO t VALUES ('e1', 'not a window')":                           0,
		"UPDATE claims SET lease_until = datetime('now', '+2 seconds') WHERE 1": 2 * time.Second,
	} {
		got := sqlDurations(q)
		if want == 0 && len(got) != 0 || want != 0 && !slices.Contains(got, want) {
			t.Errorf("sqlDurations(%q) = %v, want %v", q, got, want)
		}
	}
	d := &durationSet{seen: map[time.Duration]bool{}}
	now := int64(startMs + 60_000)
	d.observe("UPDATE claims SET lease_until = $1", []driver.NamedValue{{Value: now + 30_000}}, now)
	d.observe("INSERT INTO processed VALUES ($1)", []driver.NamedValue{{Value: int64(startMs)}}, now)
	d.observe("DELETE FROM k WHERE at < $1", []driver.NamedValue{{Value: time.UnixMilli(now - 24*3600_000)}}, now)
	d.observe("DELETE FROM k WHERE at < $1", []driver.NamedValue{{Value: time.UnixMilli(now - 24*3600_000 - 300)}}, now)
	want := []time.Duration{31 * time.Second, 24*time.Hour + time.Second}
	if got := d.windows(); !slices.Equal(got, want) {
		t.Errorf("windows %v, want %v (the events' own time is no window; windows a second apart are one)", got, want)
	}
}
