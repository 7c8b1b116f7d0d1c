package ledger

import "testing"

func TestExpectations(t *testing.T) {
	events := []Event{{ID: "e1"}, {ID: "e2", Poison: true}, {ID: "e3"}}
	produced := map[string]bool{"e1": true, "e2": true}
	want := Expected([]string{"b", "a"}, events, produced, map[string]bool{"a/e2": true})
	if len(want) != 4 || want[0].ID() != "a/e1" || want[3].ID() != "b/e2" {
		t.Fatalf("expectations %+v", want)
	}
	cases := []struct {
		x    Expectation
		got  int
		want string
	}{
		{Expectation{Credits: 1}, 1, ""},
		{Expectation{Credits: 1}, 2, "credited more than once"},
		{Expectation{Credits: 1}, 0, "produced but neither credited nor in the DLQ"},
		{Expectation{Credits: 1, DeadLettered: true}, 0, ""},
		{Expectation{Credits: 0, DeadLettered: true}, 0, ""},
		{Expectation{Credits: 0}, 0, "a poison event is not in the DLQ"},
		{Expectation{Credits: 0, DeadLettered: true}, 1, "a poison event was credited"},
	}
	for _, c := range cases {
		if got := c.x.Violation(c.got); got != c.want {
			t.Errorf("%+v with %d credits: %q, want %q", c.x, c.got, got, c.want)
		}
	}
	credits := Credits(want, map[string]int{"a/e1": 1})
	if len(credits) != 2 || credits["a/e1"] != 1 || credits["b/e1"] != 1 {
		t.Fatalf("model ledger %v", credits)
	}
}
