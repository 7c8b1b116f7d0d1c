package gen

import "pgregory.net/rapid"

// A burst is a big one only when two draws both come out at their top
// (rapid favours a range's ends, so one draw of a wide range could not make
// it rarer than about one in thirty): about one burst in 240, one
// projection scenario in 300. A big burst is 65,537+ calls to the clock,
// dearer than the rest of a scenario tens of times over, so it is drawn
// rarely: often enough that a campaign meets dozens a second (coverage
// situation hlc-counter-past-16-bits counts them), rarely enough that they
// take a small share of its time.
var (
	projBig       = rapid.IntRange(0, 7)
	projReallyBig = rapid.IntRange(0, 63)
)

// projBurstCount draws the number of ticks of a burst step: a handful, or,
// now and then, just past 65,536 — enough events within one millisecond to
// wrap a 16-bit logical counter, the overflow packed 48+16-bit stamps must
// carry into the wall, whatever the node stamped before. Shrinking goes to
// the handful.
func projBurstCount(t *rapid.T) int {
	if projBig.Draw(t, "bigBurst") == 7 && projReallyBig.Draw(t, "reallyBigBurst") == 63 {
		return 1<<16 + 1 + intTo(3).Draw(t, "burstPast16Bits")
	}
	return oneToFour.Draw(t, "burst")
}
