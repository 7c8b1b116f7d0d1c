package consumerharness

import (
	"context"
	"testing"
	"time"
)

// VerifyWith sets what its fields say and leaves the rest as an earlier
// option set it: the one option the front door has for a search is the
// sum of the separate ones.
func TestVerifyWithSetsOnlyItsNonZeroFields(t *testing.T) {
	ctx := t.Context()
	var told int
	progress := func(VerifyProgress) { told++ }
	cfg := newConfig([]Option{VerifyTime(time.Minute), VerifySchedules(7), VerifyWith(VerifyOptions{Parallel: 3, Context: ctx, Progress: progress, NoCache: true})})
	v := cfg.verify
	if v.timeBudget != time.Minute || v.maxSchedules != 7 || v.parallel != 3 || v.ctx != ctx || !v.noCache || v.noPOR || v.noSymmetry {
		t.Errorf("VerifyWith over VerifyTime and VerifySchedules: %+v", v)
	}
	v.progress(VerifyProgress{})
	if told != 1 {
		t.Error("VerifyWith did not set the progress callback")
	}
	all := newConfig([]Option{VerifyWith(VerifyOptions{Time: time.Second, Schedules: 9, Parallel: 2, Context: context.Background(), NoPOR: true, NoSymmetry: true})}).verify
	if all.timeBudget != time.Second || all.maxSchedules != 9 || all.parallel != 2 || all.ctx != context.Background() || !all.noPOR || all.noCache || !all.noSymmetry {
		t.Errorf("VerifyWith alone: %+v", all)
	}
	if zero := newConfig([]Option{VerifyWith(VerifyOptions{})}).verify; zero.timeBudget != 0 || zero.maxSchedules != 0 || zero.parallel != 0 || zero.ctx != nil || zero.progress != nil || zero.noCache || zero.noPOR || zero.noSymmetry {
		t.Errorf("a zero VerifyOptions changed the defaults: %+v", zero)
	}
}
