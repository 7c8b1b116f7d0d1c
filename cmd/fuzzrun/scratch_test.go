package main

import (
	"testing"
	"fmt"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/impl/system"
	"pgregory.net/rapid"
)

func TestScratch(t *testing.T) {
	n := 0
	tot, acts := 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		s := gen.Consumption().Draw(rt, "s")
		out, err := runner.Run(s, system.Reference())
		if err != nil { rt.Fatal(err) }
		n++
		tot += s.Size()
		acts += len(out.Consumption.Actions)
	})
	fmt.Println(n, float64(tot)/float64(n), float64(acts)/float64(n))
}
