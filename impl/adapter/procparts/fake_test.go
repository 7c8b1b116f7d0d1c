package procparts_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/contract/projector"
	"github.com/idemcheck/idemcheck/impl/mutant"
	"github.com/idemcheck/idemcheck/impl/reference/hybridclock"
	"github.com/idemcheck/idemcheck/impl/reference/orderprojector"
)

// fakeEnv selects a fake implementation: the test binary re-executed with
// this variable set serves the protocols instead of running the tests. Its
// clocks and projectors are the reference ones (or a mutant), so a check
// through the process can be compared with the same check in process.
const fakeEnv = "PROCPARTS_FAKE"

// phys is a clock.Source the fake sets from each request's physMs.
type phys struct{ ms int64 }

func (p *phys) NowMs() int64 { return p.ms }

type fakeClock struct {
	wall *phys
	c    hlc.Clock
}

type request struct {
	ID        int64           `json:"id"`
	Op        string          `json:"op"`
	Protocol  string          `json:"protocol"`
	Version   int             `json:"version"`
	Clock     int64           `json:"clock"`
	Node      string          `json:"node"`
	PhysMs    int64           `json:"physMs"`
	Count     int             `json:"count"`
	Remote    hlc.Timestamp   `json:"remote"`
	Projector int64           `json:"projector"`
	Event     projector.Event `json:"event"`
}

// fake serves the protocols as mode says on stdin/stdout and returns the
// exit status.
func fake(mode string) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 4<<20)
	out := bufio.NewWriter(os.Stdout)
	answer := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	if mode == "exit3" {
		fmt.Fprintln(os.Stderr, "cannot start: boom")
		return 3
	}
	clocks := map[int64]*fakeClock{}
	projectors := map[int64]projector.Projector{}
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "fake: bad request:", err)
			return 1
		}
		a := map[string]any{"id": req.ID, "ok": true}
		switch {
		case mode == "hang":
			time.Sleep(time.Hour)
		case mode == "garbage":
			fmt.Fprintln(out, "this is not json")
			out.Flush()
			continue
		case mode == "wrong-id":
			answer(map[string]any{"id": req.ID + 1, "ok": true})
			continue
		case mode == "store" && req.Op == "hello":
			answer(map[string]any{"id": req.ID, "error": `unknown op "hello"`, "kind": "bad_request"})
			continue
		case mode == "hang-tick" && req.Op == "tick":
			time.Sleep(time.Hour)
		case mode == "die-merge" && req.Op == "merge":
			fmt.Fprintln(os.Stderr, "TypeError: remote.wallMs is undefined")
			return 1
		case mode == "tick-error" && req.Op == "tick":
			answer(map[string]any{"id": req.ID, "error": "clock not ready", "kind": "bad_request"})
			continue
		case mode == "garbage-apply" && req.Op == "apply":
			fmt.Fprintln(out, `{"id":`)
			out.Flush()
			continue
		}
		switch req.Op {
		case "hello":
			a["protocol"], a["version"] = req.Protocol, req.Version
			switch mode {
			case "v2":
				a["version"] = 2
			case "other-protocol":
				a["protocol"] = map[string]string{"hlc": "projector", "projector": "hlc"}[req.Protocol]
			}
		case "open":
			if req.Projector != 0 {
				projectors[req.Projector] = orderprojector.NewHLC()
				if mode == "lww" {
					projectors[req.Projector] = orderprojector.NewTimestampLWW()
				}
				break
			}
			fc := &fakeClock{wall: &phys{req.PhysMs}}
			switch mode {
			case "no-merge":
				fc.c = mutant.NewHLCNoMerge(req.Node, fc.wall)
			case "refuse-all":
				c, err := hybridclock.NewWithOptions(req.Node, fc.wall, hybridclock.Options{MaxOffset: 500 * time.Millisecond})
				if err != nil {
					panic(err)
				}
				fc.c = c
				a["maxOffsetMs"] = 500
			default:
				fc.c = hybridclock.New(req.Node, fc.wall)
			}
			if mode == "negative-offset" {
				a["maxOffsetMs"] = -5
			}
			clocks[req.Clock] = fc
		case "tick":
			fc := clocks[req.Clock]
			fc.wall.ms = req.PhysMs
			a["stamp"] = fc.c.Tick()
		case "burst":
			fc := clocks[req.Clock]
			fc.wall.ms = req.PhysMs
			n := req.Count
			if mode == "burst-short" {
				n--
			}
			stamps := make([]hlc.Timestamp, n)
			for i := range stamps {
				stamps[i] = fc.c.Tick()
			}
			a["stamps"] = stamps
		case "merge":
			fc := clocks[req.Clock]
			fc.wall.ms = req.PhysMs
			ts, err := fc.c.Merge(req.Remote)
			if err != nil || mode == "refuse-all" {
				answer(map[string]any{"id": req.ID, "error": "beyond the max offset", "kind": "refused"})
				continue
			}
			a["stamp"] = ts
		case "close":
			delete(clocks, req.Clock)
			delete(projectors, req.Projector)
		case "apply":
			d := projectors[req.Projector].Apply(req.Event)
			a["applied"], a["reason"] = d.Applied, d.Reason
		case "state":
			orders := projectors[req.Projector].Orders()
			// Any order will do: the adapter sorts.
			for i, j := 0, len(orders)-1; i < j; i, j = i+1, j-1 {
				orders[i], orders[j] = orders[j], orders[i]
			}
			a["orders"] = orders
		default:
			a = map[string]any{"id": req.ID, "error": "unknown op " + req.Op, "kind": "bad_request"}
		}
		answer(a)
	}
	return 0
}
