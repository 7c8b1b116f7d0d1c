#!/usr/bin/env python3
"""Sums the CPU time (user + sys) of a go build's actions per module group,
from the file `go build -debug-actiongraph=FILE` writes, and estimates the
build's wall time on N idle cores (list scheduling by the go command's
priorities, each action taking its measured CPU time). docs/figures.md,
"Build from an empty cache".

    python3 docs/actiongraph.py ag.json [N]
"""
import collections, heapq, json, sys

a = json.load(open(sys.argv[1]))
cores = int(sys.argv[2]) if len(sys.argv) > 2 else 2
ids = {x["ID"]: x for x in a}


def cpu(x):
    return (x.get("CmdUser", 0) + x.get("CmdSys", 0)) / 1e9


groups = [
    ("modernc.org/sqlite", "modernc.org/sqlite"), ("modernc.org/libc", "modernc.org/libc"), ("modernc.org (other)", "modernc.org/"),
    ("nats (server, client, jwt, nkeys)", "github.com/nats-io/"), ("kafka (franz-go, kfake)", "github.com/twmb/"),
    ("compression (klauspost, lz4)", "github.com/klauspost/"), ("compression (klauspost, lz4)", "github.com/pierrec/"),
    ("rabbitmq (amqp091)", "github.com/rabbitmq/"), ("redis (go-redis)", "github.com/redis/"), ("pgx", "github.com/jackc/"),
    ("golang.org/x", "golang.org/x/"), ("idemcheck", "github.com/idemcheck/"),
]
tot = collections.Counter()
for x in a:
    p, g = x.get("Package", ""), "std and other modules"
    if x["Mode"] == "link":
        g = "link"
    elif x["Mode"] != "build":
        g = "cgo and other actions"
    else:
        for name, pre in groups:
            if p.startswith(pre):
                g = name
                break
    tot[g] += cpu(x)
for g, c in tot.most_common():
    print(f"{c:7.1f} s  {g}")
print(f"{sum(tot.values()):7.1f} s  CPU in all")
print("largest packages:")
for x in sorted(a, key=cpu, reverse=True)[:8]:
    print(f"{cpu(x):7.1f} s  {x['Mode']} {x.get('Package', '')}")

rdeps, left = collections.defaultdict(list), {}
for i, x in ids.items():
    left[i] = len(x.get("Deps") or [])
    for d in x.get("Deps") or []:
        rdeps[d].append(i)
ready = [(ids[i].get("Priority", 0), i) for i in ids if left[i] == 0]
heapq.heapify(ready)
t, running = 0.0, []
while ready or running:
    while ready and len(running) < cores:
        _, i = heapq.heappop(ready)
        heapq.heappush(running, (t + cpu(ids[i]), i))
    t, i = heapq.heappop(running)
    for r in rdeps[i]:
        left[r] -= 1
        if left[r] == 0:
            heapq.heappush(ready, (ids[r].get("Priority", 0), r))
print(f"estimated wall time on {cores} idle cores: {t:.0f} s")
