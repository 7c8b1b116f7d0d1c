package outside

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestOutsideTheBubble: from inside a bubble, Do and Go run on the
// machine's clock, not the bubble's (which starts in 2000), and what Go
// starts may outlive the bubble.
func TestOutsideTheBubble(t *testing.T) {
	var inDo, inGo time.Time
	release := make(chan struct{})
	var after <-chan struct{}
	synctest.Test(t, func(t *testing.T) {
		if time.Now().Year() != 2000 {
			t.Fatal("not in a bubble")
		}
		Do(func() { inDo = time.Now() })
		<-Go(func() { inGo = time.Now() })
		after = Go(func() { <-release })
	})
	close(release)
	<-after
	if inDo.Year() <= 2000 || inGo.Year() <= 2000 {
		t.Errorf("Do read %v and Go %v: the bubble's clock", inDo, inGo)
	}
}
