package main

// The tests cover every command, fuzzrun broker and the targets over real
// servers included: the test binary links them as -tags servers does.
import _ "github.com/idemcheck/idemcheck/cmd/fuzzrun/internal/servers"
