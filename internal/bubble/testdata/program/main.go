// Command program makes a testing/synctest bubble from a program that is
// not a test: package bubble's test runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/bubble"
)

func main() {
	if err := bubble.Available(); err != nil {
		fmt.Println("unparsed:", err)
	}
	testing.Init()
	flag.Parse()
	var start, end time.Time
	err := bubble.Run(func() {
		start = time.Now()
		time.Sleep(time.Hour)
		end = time.Now()
	})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println(start.UTC().Format(time.RFC3339), end.Sub(start))
}
