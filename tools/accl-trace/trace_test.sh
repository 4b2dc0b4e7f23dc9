#!/bin/sh
# accl-trace end to end (ctest accl_trace.perfetto_json): accl-perf runs all-reduces on two thread
# ranks of the host backend with the plugin loaded, and each rank's trace must pass
# scripts/trace-check.py (the trace-event format, unique ids, parents that exist and start first,
# every event stopped) with the API calls, operations and channel events of every iteration, and,
# through the network, the proxy's operations and steps; the user's profiler tag of a Config call. A
# broken trace must fail the same check, so the check is known to bite.
#   trace_test.sh ACCL_PERF TRACE_PLUGIN TRACE_CHECK
set -eu
perf=$1 plugin=$2 check=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ACCL_BACKEND=host NCCL_PROFILER_PLUGIN="$plugin" ACCL_TRACE_FILE="$dir/trace-r%r.json" \
  "$perf" -C all_reduce -g 2 -b 8 -e 8K -f 1024 -n 3 -w 1 > "$dir/perf.txt"
# Two sizes x (1 warm-up + 3 timed) calls at least, each with its API event and one channel event.
python3 "$check" --expect AllReduce:8 "--expect" "AllReduce (api):8" --expect "ch 0:8" --expect KernelLaunch:8 \
  "$dir/trace-r0.json" "$dir/trace-r1.json"
# Through the network (shared memory and P2P off): the proxy's operations and steps appear too,
# as async begin / end pairs.
ACCL_BACKEND=host NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo \
  NCCL_PROFILER_PLUGIN="$plugin" ACCL_TRACE_FILE="$dir/net-r%r.json" \
  "$perf" -C all_reduce -g 2 -b 1M -e 1M -n 2 -w 1 > "$dir/perf-net.txt"
python3 "$check" --expect AllReduce:3 --expect "send 1:1" --expect "recv 1:1" --expect "step 0:1" "$dir/net-r0.json"
python3 "$check" --expect AllReduce:3 --expect "send 0:1" --expect "recv 0:1" --expect "step 0:1" "$dir/net-r1.json"
# The user's profiler tag of the Config calls reaches the trace (v7; the v6 entry has none): every
# all-reduce (warm-up, timed and checking calls) and its API call carry 42, so a plugin taken as
# v6 or a tag lost on the way fails.
ACCL_BACKEND=host NCCL_PROFILER_PLUGIN="$plugin" ACCL_TRACE_FILE="$dir/tag-r%r.json" \
  "$perf" -C all_reduce -g 2 -b 64 -e 64 -n 2 -w 1 --coll-config auto --coll-tag 0x2a > "$dir/perf-tag.txt"
python3 "$check" --expect AllReduce:3 "$dir/tag-r0.json"
python3 - "$dir/tag-r0.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
tags = {cat: [e["args"].get("userTag") for e in events if e.get("cat") == cat] for cat in ("Coll", "CollApi")}
if len(tags["Coll"]) < 3 or len(tags["Coll"]) != len(tags["CollApi"]) or \
        any(t != 42 for t in tags["Coll"] + tags["CollApi"]):
    sys.exit(f"accl-trace: expected userTag 42 on every Coll and CollApi event (3 or more each), got {tags}")
PY
# The check must refuse a trace whose event names a parent that is not there.
sed 's/"parent":1,/"parent":999999,/' "$dir/trace-r0.json" > "$dir/broken.json"
if python3 "$check" "$dir/broken.json" > "$dir/broken.txt"; then
  echo "trace-check accepted a trace with a dangling parent" >&2
  exit 1
fi
grep -q "parent 999999 is not an event" "$dir/broken.txt"
echo "accl-trace: both ranks' traces pass; a broken one is refused"
