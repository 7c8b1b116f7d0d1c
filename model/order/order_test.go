package order

import (
	"strings"
	"testing"
)

func TestNextIsTheLifecycle(t *testing.T) {
	cases := []struct {
		from Status
		kind Kind
		want Status
		ok   bool
	}{
		{None, Created, StatusCreated, true},
		{None, Paid, None, false},
		{None, Cancelled, None, false},
		{StatusCreated, Created, None, false},
		{StatusCreated, Paid, StatusPaid, true},
		{StatusCreated, Cancelled, StatusCancelled, true},
		{StatusPaid, Paid, None, false},
		{StatusPaid, Cancelled, StatusCancelled, true},
		{StatusCancelled, Paid, None, false},
		{StatusCancelled, Cancelled, None, false},
		{StatusCancelled, Created, None, false},
	}
	for _, c := range cases {
		got, err := Next(c.from, c.kind)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("Next(%q, %s) = %q, %v; want %q, ok=%v", c.from, c.kind, got, err, c.want, c.ok)
		}
	}
}

func TestFinalStatusFollowsTheChainNotTheListOrder(t *testing.T) {
	// Listed out of causal order on purpose: the model must not care.
	history := []Event{
		{ID: "e3", OrderID: "o1", Kind: Cancelled, Prev: "e2"},
		{ID: "e2", OrderID: "o1", Kind: Paid, Prev: "e1"},
		{ID: "e4", OrderID: "o2", Kind: Created},
		{ID: "e1", OrderID: "o1", Kind: Created},
	}
	got, err := FinalStatus(history)
	if err != nil {
		t.Fatal(err)
	}
	if got["o1"] != StatusCancelled || got["o2"] != StatusCreated || len(got) != 2 {
		t.Fatalf("FinalStatus = %v; want o1 cancelled, o2 created", got)
	}
}

func TestFinalStatusRejectsHistoriesWithoutOneChain(t *testing.T) {
	cases := map[string]struct {
		history []Event
		want    string
	}{
		"fork": {[]Event{
			{ID: "e1", OrderID: "o1", Kind: Created},
			{ID: "e2", OrderID: "o1", Kind: Paid, Prev: "e1"},
			{ID: "e3", OrderID: "o1", Kind: Cancelled, Prev: "e1"},
		}, "both follow e1"},
		"two starts": {[]Event{
			{ID: "e1", OrderID: "o1", Kind: Created},
			{ID: "e2", OrderID: "o1", Kind: Created},
		}, "both e1 and e2 start it"},
		"no start": {[]Event{
			{ID: "e1", OrderID: "o1", Kind: Paid, Prev: "e9"},
		}, "not an event of this order"},
		"other order": {[]Event{
			{ID: "e1", OrderID: "o1", Kind: Created},
			{ID: "e2", OrderID: "o2", Kind: Cancelled, Prev: "e1"},
		}, "not an event of this order"},
		"bad transition": {[]Event{
			{ID: "e1", OrderID: "o1", Kind: Created},
			{ID: "e2", OrderID: "o1", Kind: Cancelled, Prev: "e1"},
			{ID: "e3", OrderID: "o1", Kind: Paid, Prev: "e2"},
		}, "OrderPaid cannot follow cancelled"},
		"duplicate id": {[]Event{
			{ID: "e1", OrderID: "o1", Kind: Created},
			{ID: "e1", OrderID: "o1", Kind: Created},
		}, "appears twice"},
		"detached cycle": {[]Event{
			{ID: "e1", OrderID: "o1", Kind: Created},
			{ID: "e2", OrderID: "o1", Kind: Paid, Prev: "e3"},
			{ID: "e3", OrderID: "o1", Kind: Paid, Prev: "e2"},
		}, "not on the chain"},
	}
	for name, c := range cases {
		_, err := FinalStatus(c.history)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v; want one containing %q", name, err, c.want)
		}
	}
}
