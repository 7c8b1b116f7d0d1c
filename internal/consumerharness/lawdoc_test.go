package consumerharness

import (
	"slices"
	"testing"
)

// Every law says what it demands, and a consumer without a dedupe query
// is not judged by atomicity.
func TestEveryLawIsDocumented(t *testing.T) {
	for _, l := range Laws {
		if LawDoc(l) == "" {
			t.Errorf("law %s has no LawDoc", l)
		}
	}
	c := adrConsumer()
	if !slices.Equal(c.Judged(), Laws) {
		t.Errorf("with a dedupe query the judged laws are %v, want %v", c.Judged(), Laws)
	}
	c.Dedupe = ""
	if got := c.Judged(); slices.Contains(got, LawAtomicity) || len(got) != len(Laws)-1 {
		t.Errorf("without a dedupe query the judged laws are %v", got)
	}
}
