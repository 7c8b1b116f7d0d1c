package hunt

import (
	"regexp"
	"strconv"
	"time"

	"github.com/idemcheck/idemcheck/internal/machineclock"
	"pgregory.net/rapid"
)

// Config is what one hunt asks of rapid.
type Config struct {
	// Name names the hunt (the recorder's name, in rapid's messages).
	Name string
	// Checks, when positive, is how many scenarios rapid draws; zero
	// leaves rapid's own count (-rapid.checks).
	Checks int
	// Seed, when not zero, is rapid's seed; zero leaves rapid's own.
	Seed uint64
	// ShrinkTime, when positive, bounds rapid's shrink.
	ShrinkTime time.Duration
}

// flags are rapid's flags for c: no fail file, and what c sets.
func (c Config) flags() map[string]string {
	f := map[string]string{"rapid.nofailfile": "true"}
	if c.Checks > 0 {
		f["rapid.checks"] = strconv.Itoa(c.Checks)
	}
	if c.Seed != 0 {
		f["rapid.seed"] = strconv.FormatUint(c.Seed, 10)
	}
	if c.ShrinkTime > 0 {
		f["rapid.shrinktime"] = c.ShrinkTime.String()
	}
	return f
}

// Verdict is what a hunt's judge says of one drawn scenario S.
type Verdict[F any] struct {
	// Failure, when not nil, is the scenario's failure: rapid shrinks it
	// (unless Stop) and the hunt keeps the last one.
	Failure *F
	// Summary is the failure's one stable line: rapid tells two failures
	// apart by it.
	Summary string
	// Stop ends the hunt at this failure, not shrunk by rapid (the rest
	// of rapid's count passes at once).
	Stop bool
}

// Found is the result of Run.
type Found[F any] struct {
	// Failed is whether a drawn scenario failed.
	Failed bool
	// Failure is the last failure judged: after rapid's shrink, the
	// smallest; nil when nothing failed (or rapid failed by itself:
	// Message says why).
	Failure *F
	// Stopped is whether the hunt stopped at Failure without shrinking.
	Stopped bool
	// Checks is how many scenarios were drawn: up to and including the
	// first failure, or all of them.
	Checks int
	// Seed is the seed rapid reports for the failure (zero when it
	// reports none).
	Seed uint64
	// Message is rapid's own report.
	Message string
	// FoundAfter is the machine time from the hunt's start to its first
	// failure, before any shrinking; Elapsed the hunt's, both read on the
	// machine's clock (a synctest bubble's fake clock moves by years).
	FoundAfter, Elapsed time.Duration
}

var (
	failedAfter = regexp.MustCompile(`failed after (\d+) tests`)
	seedRe      = regexp.MustCompile(`-rapid\.seed=(\d+)`)
)

// Run is the one hunt loop of the property hunts and the consumer hunts:
// under the flags of c (WithFlags), rapid draws scenarios with draw and
// judge judges each; the first failure is shrunk by rapid (its later
// plays are shrink candidates, counted in no Checks), unless its verdict
// says Stop. A judge that sees bad input calls t.Fatalf itself and keeps
// the error; Run then reports rapid's failure with no Failure.
func Run[S, F any](c Config, draw func(*rapid.T) S, judge func(t *rapid.T, s S, shrinking bool) Verdict[F]) Found[F] {
	var res Found[F]
	start := machineclock.Now()
	shrinking := false
	rec := NewRecorder(c.Name)
	CheckWithFlags(rec, c.flags(), func(t *rapid.T) {
		if res.Stopped {
			return // the hunt is over; rapid plays out its count
		}
		if !shrinking {
			res.Checks++
		}
		s := draw(t)
		v := judge(t, s, shrinking)
		if v.Failure == nil {
			return
		}
		if res.FoundAfter == 0 {
			res.FoundAfter = machineclock.Since(start)
		}
		res.Failure = v.Failure
		if !shrinking && v.Stop {
			res.Stopped = true
			return
		}
		shrinking = true // rapid plays only shrink candidates from now on
		t.Fatalf("%s", v.Summary)
	})
	res.Elapsed = machineclock.Since(start)
	res.Message = rec.Message()
	res.Failed = rec.Failed() || res.Stopped
	if !res.Failed {
		res.Failure, res.FoundAfter = nil, 0
	}
	if m := failedAfter.FindStringSubmatch(res.Message); m != nil {
		n, _ := strconv.Atoi(m[1])
		res.Checks = n + 1
	}
	if m := seedRe.FindStringSubmatch(res.Message); m != nil {
		res.Seed, _ = strconv.ParseUint(m[1], 10, 64)
	}
	return res
}
