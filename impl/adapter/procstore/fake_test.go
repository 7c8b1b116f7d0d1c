package procstore_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
)

// fakeEnv selects a fake adapter: the test binary re-executed with this
// variable set plays a (mis)behaving adapter instead of running the tests.
const fakeEnv = "PROCSTORE_FAKE"

// fake plays the adapter named by mode on stdin/stdout and returns the exit
// status. Each mode is one way an adapter can behave, or fail to.
func fake(mode string) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 4<<20)
	out := bufio.NewWriter(os.Stdout)
	answer := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	switch mode {
	case "exit3":
		fmt.Fprintln(os.Stderr, "cannot open state: boom")
		return 3
	case "silent-exit":
		return 0
	}
	n := 0
	for in.Scan() {
		n++
		var req struct {
			ID    int64  `json:"id"`
			Op    string `json:"op"`
			NowMs int64  `json:"nowMs"`
			Token uint64 `json:"token"`
			Tx    int64  `json:"tx"`
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "fake: bad request:", err)
			return 1
		}
		switch {
		case mode == "hang" || (mode == "hang-second" && n == 2):
			time.Sleep(time.Hour)
		case mode == "die-second" && n == 2:
			fmt.Fprintln(os.Stderr, "panic: the second request")
			return 3
		case mode == "garbage":
			fmt.Fprintln(out, "this is not json")
			out.Flush()
			continue
		case mode == "wrong-id":
			answer(map[string]any{"id": req.ID + 1, "ok": true, "nowMs": req.NowMs})
			continue
		case mode == "wrong-now":
			answer(map[string]any{"id": req.ID, "ok": true, "nowMs": req.NowMs + 1})
			continue
		}
		answer(okAnswer(mode, req.ID, req.Op, req.NowMs, req.Token, req.Tx))
		if mode == "stop-reading" {
			time.Sleep(time.Hour) // alive, but reads no more requests
		}
	}
	return 0
}

// okAnswer is the answer of a minimal well-behaved adapter. Its only
// durable state is the last token, kept in the state file, so a test can
// see a restarted process carry on from it.
func okAnswer(mode string, id int64, op string, nowMs int64, token uint64, tx int64) map[string]any {
	a := map[string]any{"id": id, "ok": true}
	switch op {
	case "now":
		a["nowMs"] = nowMs
	case "claim":
		if mode == "no-claim" {
			return a
		}
		path := os.Getenv("IDEMCHECK_STATE_FILE")
		b, _ := os.ReadFile(path)
		last, _ := strconv.ParseUint(string(b), 10, 64)
		last++
		os.WriteFile(path, []byte(strconv.FormatUint(last, 10)), 0o644)
		a["claim"] = map[string]any{"outcome": "acquired", "token": last, "attempt": 1, "atMs": nowMs}
	case "begin":
		a["tx"] = 7
	case "commit":
		a["commit"] = map[string]any{"credited": 1, "atMs": nowMs}
	case "fail":
		switch token {
		case 999:
			return map[string]any{"id": id, "error": "token 999 is old", "kind": "stale"}
		case 998:
			return map[string]any{"id": id, "error": "nobody holds it", "kind": "not_held"}
		case 997:
			return map[string]any{"id": id, "error": "disk full", "kind": "io"}
		}
	case "records":
		a["records"] = []map[string]any{
			{"key": map[string]any{"tenant": "b", "consumer": "c", "id": "1"}, "state": "processed", "token": 2},
			{"key": map[string]any{"tenant": "a", "consumer": "c", "id": "1"}, "state": "processing", "token": 1},
		}
	}
	return a
}
