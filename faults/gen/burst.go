package gen

import "pgregory.net/rapid"

// projBigBurstOneIn makes one burst in this many a big one: a big burst
// costs tens of thousands of HLC readings, so it is drawn rarely, yet often
// enough that every hunt meets a few.
const projBigBurstOneIn = 8

// projBurstCount draws the number of ticks of a burst step: a handful, or,
// now and then, just around 65,536 — enough events within one millisecond
// to wrap a 16-bit logical counter, the overflow packed 48+16-bit stamps
// must carry into the wall. Shrinking goes to the handful.
func projBurstCount(t *rapid.T) int {
	if rapid.IntRange(0, projBigBurstOneIn-1).Draw(t, "bigBurst") == projBigBurstOneIn-1 {
		return 1<<16 + rapid.IntRange(0, 3).Draw(t, "burstPast16Bits")
	}
	return rapid.IntRange(1, 4).Draw(t, "burst")
}
