package consumerproc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestInABubble: a harness may run deliveries in a testing/synctest bubble
// (consumertest.Check does). An idle process must not keep the bubble's
// clock from moving, deliveries must work, and a hang must still end with
// the timeout, on the machine's clock.
func TestInABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openDB(t)
		f, c, err := fakeWorker("ok")("w1")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		time.Sleep(time.Hour) // returns at once: nothing in the bubble waits on the process
		if time.Since(start) != time.Hour {
			t.Errorf("the bubble's clock moved by %v", time.Since(start))
		}
		if err := f(context.Background(), db, msg("e1", "u1", 5)); err != nil {
			t.Fatal(err)
		}
		h, hc, err := fakeWorker("hang-deliver")("w1")
		if err != nil {
			t.Fatal(err)
		}
		defer hc.Close()
		err = mustPanic(t, h, db, msg("e2", "u1", 5))
		wantError(t, err, 0, "no answer within 500ms")
	})
}
