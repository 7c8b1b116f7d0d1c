package consumerharness

import (
	"context"
	"database/sql/driver"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/internal/consumerharness/backend"
	"github.com/idemcheck/idemcheck/internal/sqlscan"
)

// The consumer's own windows (Bounds.ConsumerDurations). A consumer that
// keeps a lease or a TTL says how long in its SQL ('-10 seconds',
// interval '30 days', INTERVAL 5 MINUTE) or in the times it passes as
// arguments (a lease's end, now + 30 s; a cut-off, now - 24 h, as a time
// or as a timestamp in ms or s). A few drawn scenarios are played before
// the search, with every statement read for both; time then moves past
// each window found, by a second, as well as by the ladder.

// discoveryPlays is how many drawn scenarios the discovery plays.
const discoveryPlays = 24

// maxOwnDurations bounds the windows found that the search moves time
// past: the shortest ones.
const maxOwnDurations = 4

// consumerDurations plays a few drawn scenarios against c and returns the
// windows its statements named, each a second longer, shortest first.
func consumerDurations(c Consumer, cfg config) ([]time.Duration, error) {
	dcfg := newConfig(nil)
	dcfg.backend, dcfg.noBubble, dcfg.t = cfg.backend, cfg.noBubble, cfg.t
	if _, ok := dcfg.backend.(backend.SQLiteReuse); ok {
		dcfg.backend = backend.SQLite{}
	}
	stop, err := dcfg.start()
	if err != nil {
		return nil, err
	}
	defer stop()
	found := &durationSet{seen: map[time.Duration]bool{}}
	gen := Generator(dcfg.maxSteps)
	for i := range discoveryPlays {
		s := gen.Example(i)
		ctx := context.WithValue(context.Background(), durationsKey{}, found)
		if _, err := playScenario(ctx, c, s, dcfg); err != nil {
			return nil, err
		}
	}
	return found.windows(), nil
}

// durationsKey carries the set a discovery fills into its runs.
type durationsKey struct{}

// durationSet is the windows a discovery found.
type durationSet struct {
	mu   sync.Mutex
	seen map[time.Duration]bool
}

func (d *durationSet) add(x time.Duration) {
	if x < time.Second || x > 400*24*time.Hour {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seen[x.Round(time.Millisecond)] = true
}

// windows are the shortest windows found, each a second longer so that
// time moves past it; windows within a second of a shorter one are one.
func (d *durationSet) windows() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	var all []time.Duration
	for x := range d.seen {
		all = append(all, x)
	}
	slices.Sort(all)
	var out []time.Duration
	for _, x := range all {
		if n := len(out); n > 0 && x-(out[n-1]-time.Second) < time.Second {
			continue
		}
		out = append(out, x+time.Second)
	}
	return out[:min(len(out), maxOwnDurations)]
}

// observe reads a statement for the windows it names, at scenario time
// nowMs.
func (d *durationSet) observe(query string, args []driver.NamedValue, nowMs int64) {
	for _, x := range sqlDurations(query) {
		d.add(x)
	}
	for _, a := range args {
		// A time the run itself made (the events' occurredAt, the start)
		// is data, not a window: it is only as far from now as the
		// schedule moved time.
		if at, ok := argTime(a.Value); ok && at == startMs {
			continue
		}
		if x, ok := argDistance(a.Value, nowMs); ok {
			d.add(x)
		}
	}
}

var sqlDurationCache sync.Map // query -> []time.Duration

// sqlDurations are the intervals a statement's text spells: a string
// literal made of nothing but amounts of time ('-10 seconds', '1 hour 30
// minutes', the body of interval '30 days') and MySQL's INTERVAL n UNIT.
func sqlDurations(query string) []time.Duration {
	if v, ok := sqlDurationCache.Load(query); ok {
		return v.([]time.Duration)
	}
	var out []time.Duration
	words := sqlscan.Significant(query)
	for i, t := range words {
		switch {
		case t.Kind == sqlscan.String:
			if x, ok := parseAmounts(t.Value()); ok {
				out = append(out, x)
			}
		case t.Is("interval") && i+2 < len(words) && words[i+1].Kind == sqlscan.Number && words[i+2].Kind == sqlscan.Word:
			if x, ok := parseAmounts(words[i+1].Text + " " + words[i+2].Text); ok {
				out = append(out, x)
			}
		}
	}
	sqlDurationCache.Store(query, out)
	return out
}

var amountRE = regexp.MustCompile(`(?i)^\s*([+-]?\s*\d+(?:\.\d+)?)\s*(milliseconds?|msecs?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|w|months?|mons?|years?|y)\b`)

// parseAmounts reads "1 hour 30 minutes", "-10 seconds", "30 days".
func parseAmounts(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	var total float64
	for s != "" {
		m := amountRE.FindStringSubmatch(s)
		if m == nil {
			return 0, false
		}
		n, err := strconv.ParseFloat(strings.ReplaceAll(m[1], " ", ""), 64)
		if err != nil {
			return 0, false
		}
		total += math.Abs(n) * float64(unitOf(strings.ToLower(m[2])))
		s = strings.TrimSpace(s[len(m[0]):])
	}
	return time.Duration(total), total > 0
}

func unitOf(u string) time.Duration {
	switch {
	case strings.HasPrefix(u, "ms") || strings.HasPrefix(u, "milli") || strings.HasPrefix(u, "msec"):
		return time.Millisecond
	case strings.HasPrefix(u, "s"):
		return time.Second
	case strings.HasPrefix(u, "mo"):
		return 30 * 24 * time.Hour
	case strings.HasPrefix(u, "m"):
		return time.Minute
	case strings.HasPrefix(u, "h"):
		return time.Hour
	case strings.HasPrefix(u, "d"):
		return 24 * time.Hour
	case strings.HasPrefix(u, "w"):
		return 7 * 24 * time.Hour
	case strings.HasPrefix(u, "y"):
		return 365 * 24 * time.Hour
	}
	return 0
}

// argTime reads an argument that is a time as ms since the epoch.
func argTime(v driver.Value) (int64, bool) {
	switch x := v.(type) {
	case time.Time:
		return x.UnixMilli(), true
	case int64:
		return x, true
	}
	return 0, false
}

// argDistance is how far from the scenario's time an argument that is a
// time lies: a time.Time, a timestamp in ms or s, a time's text.
func argDistance(v driver.Value, nowMs int64) (time.Duration, bool) {
	abs := func(ms int64) time.Duration {
		if ms < 0 {
			ms = -ms
		}
		return time.Duration(ms) * time.Millisecond
	}
	near := func(ms int64) bool { return abs(ms-nowMs) <= 400*24*time.Hour }
	switch x := v.(type) {
	case time.Time:
		return abs(x.UnixMilli() - nowMs), true
	case int64:
		switch {
		case near(x):
			return abs(x - nowMs), true
		case near(x * 1000):
			return abs(x*1000 - nowMs), true
		}
	case float64:
		if near(int64(x * 1000)) {
			return abs(int64(x*1000) - nowMs), true
		}
	case string:
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02T15:04:05"} {
			if t, err := time.Parse(layout, x); err == nil {
				return abs(t.UnixMilli() - nowMs), true
			}
		}
	}
	return 0, false
}
