package machineclock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemcheck/idemcheck/internal/machineclock"
)

// In a bubble whose clock jumps a day, the machine's clock does not.
func TestTheMachinesClockInABubble(t *testing.T) {
	outside := machineclock.Now()
	synctest.Test(t, func(t *testing.T) {
		start := machineclock.Now()
		time.Sleep(24 * time.Hour)
		if moved := machineclock.Since(start); moved >= time.Hour {
			t.Fatalf("the machine's clock moved %v while the bubble's moved a day", moved)
		}
		if d := start.Sub(outside); d < 0 || d > time.Hour {
			t.Fatalf("inside the bubble the machine's clock reads %v after the reading outside it", d)
		}
	})
}
