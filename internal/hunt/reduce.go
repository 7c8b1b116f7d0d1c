package hunt

// Reduce is the one reduction loop of the hunts: starting from s, it takes
// the first of candidates(cur) that keep accepts, again and again, until
// keep accepts none, and returns where it ended — s itself when no
// candidate was kept. keep is "still fails the same way" (and whatever
// else a caller asks of a candidate: valid, strictly simpler); each
// package says what its candidates are.
func Reduce[S any](s S, candidates func(S) []S, keep func(S) bool) S {
	cur := s
	for {
		kept := false
		for _, c := range candidates(cur) {
			if keep(c) {
				cur, kept = c, true
				break
			}
		}
		if !kept {
			return cur
		}
	}
}
