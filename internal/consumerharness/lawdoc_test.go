package consumerharness

import (
	"slices"
	"testing"
)

// Every law says what it demands, a consumer without a dedupe query is
// not judged by atomicity, and a queue consumer by none of the log's laws.
func TestEveryLawIsDocumented(t *testing.T) {
	for _, l := range Laws {
		if LawDoc(l) == "" {
			t.Errorf("law %s has no LawDoc", l)
		}
	}
	queue := slices.DeleteFunc(slices.Clone(Laws), LogOnly)
	c := adrConsumer()
	if !slices.Equal(c.Judged(), queue) {
		t.Errorf("with a dedupe query the judged laws are %v, want %v", c.Judged(), queue)
	}
	c.Dedupe = ""
	if got := c.Judged(); slices.Contains(got, LawAtomicity) || len(got) != len(queue)-1 {
		t.Errorf("without a dedupe query the judged laws are %v", got)
	}
}

// A log consumer is judged by the log's laws (partition-order only when
// it claims order), not by the retry policy's or the replay's.
func TestALogConsumerIsJudgedByTheLogsLaws(t *testing.T) {
	lc := ownPositions(false)
	got := logConsumer(lc).Judged()
	want := []string{LawRuns, LawSingleCredit, LawNothingLost, LawHealthyApplied, LawCommitAfterApply, LawPartitionOrder}
	if !slices.Equal(got, want) {
		t.Errorf("an ordered log consumer is judged by %v, want %v", got, want)
	}
	lc.Ordered = false
	if got := logConsumer(lc).Judged(); slices.Contains(got, LawPartitionOrder) {
		t.Errorf("a log consumer that claims no order is judged by %v", got)
	}
}
