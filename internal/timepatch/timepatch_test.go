package timepatch_test

import (
	"errors"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/timepatch"
)

func TestNowIsReplacedAndRestored(t *testing.T) {
	fixed := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	restore, err := timepatch.Now(func() time.Time { return fixed })
	if errors.Is(err, timepatch.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	got := time.Now()
	restore()
	if !got.Equal(fixed) {
		t.Fatalf("patched time.Now = %v, want %v", got, fixed)
	}
	if time.Now().Equal(fixed) {
		t.Fatal("time.Now still patched after restore")
	}
}
