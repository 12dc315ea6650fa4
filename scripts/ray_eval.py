#!/usr/bin/env python3
"""Fan `raglab eval retrieval --shard i/n` out over a Ray cluster, then merge.

Each shard runs as one Ray task on whatever node Ray places it: it ranks its share of
the queries (split by a stable hash of their ids, as `--shard I/N` splits them) and stores the
ranked lists in the shared workspace (an `s3://` workspace for several machines). When
every task has finished, the driver runs `--merge`, which computes the report over
all stored rows (never averaged averages) and prints it.

    python scripts/ray_eval.py --raglab raglab --shards 4 -- \
        --workspace s3://bucket/study --queries questions.jsonl --methods bm25,dense

Everything after `--` is passed to `raglab eval retrieval` (give `--workspace`; the
`--shard`, `--batch`, `--merge` and `--json` flags are added here). Without
`--address` a local Ray cluster is started for this run. Each task runs raglab with
only the environment it needs, passed explicitly (Ray ships it to every node): the
RAGLAB_*, AWS_*, XDG_* and LC_* variables, PATH, HOME, LANG, TMPDIR, USER, RUST_LOG and
LD_LIBRARY_PATH, and each variable named with `--pass-env` (an endpoint's
`api_key_env`, say). Every other variable of this shell, secrets included, stays here.
Prints the merged JSON report on stdout and the timings on stderr.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import uuid


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--raglab", default="raglab", help="the raglab binary every node runs")
    ap.add_argument("--shards", type=int, required=True, help="number of shards (Ray tasks)")
    ap.add_argument("--batch", default=None, help="batch name the shards store their lists under (default: a fresh one)")
    ap.add_argument("--address", default=None, help="Ray cluster address (default: start a local cluster)")
    ap.add_argument("--cpus-per-shard", type=float, default=1.0)
    ap.add_argument("--timings", default=None, help="also write the timings as JSON to this file")
    ap.add_argument("--pass-env", action="append", default=[], metavar="NAME",
                    help="also pass this environment variable to the tasks (repeatable)")
    ap.add_argument("eval_args", nargs=argparse.REMAINDER, help="-- then the `raglab eval retrieval` arguments")
    args = ap.parse_args()
    eval_args = args.eval_args[1:] if args.eval_args[:1] == ["--"] else args.eval_args
    if args.shards < 1:
        ap.error("--shards must be at least 1")
    batch = args.batch or f"ray-{uuid.uuid4().hex[:12]}"

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray  # imported late: `--help` works without Ray installed

    started = time.monotonic()
    if args.address:
        ray.init(address=args.address, logging_level="WARNING")
    else:
        ray.init(include_dashboard=False, logging_level="WARNING",
                 object_store_memory=80 * 1024 * 1024)
    cluster_up = time.monotonic() - started
    env = task_environment(os.environ, args.pass_env)

    @ray.remote(num_cpus=args.cpus_per_shard, max_retries=0)
    def shard(i: int):
        t = time.monotonic()
        cmd = [args.raglab, "eval", "retrieval", *eval_args,
               "--shard", f"{i}/{args.shards}", "--batch", batch, "--json"]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        return {"shard": i, "rc": p.returncode, "seconds": time.monotonic() - t,
                "stderr": p.stderr[-4000:], "node": ray.util.get_node_ip_address()}

    t = time.monotonic()
    results = ray.get([shard.remote(i) for i in range(1, args.shards + 1)])
    shards_wall = time.monotonic() - t
    ray.shutdown()
    failed = [r for r in results if r["rc"] != 0]
    for r in failed:
        print(f"shard {r['shard']}/{args.shards} failed (exit {r['rc']}):\n{r['stderr']}", file=sys.stderr)
    if failed:
        return 1

    t = time.monotonic()
    merge = subprocess.run([args.raglab, "eval", "retrieval", *eval_args,
                            "--merge", "--batch", batch, "--json"],
                           capture_output=True, text=True)
    merge_wall = time.monotonic() - t
    if merge.returncode != 0:
        print(f"merge failed (exit {merge.returncode}):\n{merge.stderr}", file=sys.stderr)
        return 1
    sys.stdout.write(merge.stdout)
    timings = {
        "batch": batch,
        "shards": args.shards,
        "cluster_start_s": round(cluster_up, 3),
        "shards_wall_s": round(shards_wall, 3),
        "merge_s": round(merge_wall, 3),
        "total_s": round(time.monotonic() - started, 3),
        "per_shard_s": {r["shard"]: round(r["seconds"], 3) for r in results},
        "nodes": sorted({r["node"] for r in results}),
    }
    print(json.dumps(timings), file=sys.stderr)
    if args.timings:
        with open(args.timings, "w") as f:
            json.dump(timings, f, indent=2)
    return 0


TASK_PREFIXES = ("RAGLAB_", "AWS_", "XDG_", "LC_")
TASK_NAMES = {"PATH", "HOME", "LANG", "TMPDIR", "USER", "RUST_LOG", "LD_LIBRARY_PATH"}


def task_environment(environ, extra):
    """The variables a shard task needs, and those named in `extra`; nothing else."""
    keep = TASK_NAMES | set(extra)
    return {k: v for k, v in environ.items() if k in keep or k.startswith(TASK_PREFIXES)}


if __name__ == "__main__":
    sys.exit(main())
