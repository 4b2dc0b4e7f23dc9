#!/usr/bin/env bash
# Net transport vs raw TCP between two namespace hosts, measured in ONE run of multihost.sh (the
# same two namespaces, the same veth + bridge path): first tcp_bidir (raw TCP, both directions busy
# at once, as iperf3 --bidir), then accl-perf all_reduce with one rank per host over NCCL_NET
# (default Socket), 64 MiB to 256 MiB. Prints a table: busbw (out of place / in place), the raw TCP
# rate per direction, busbw / raw, and `nproc`. Not a ctest test: speeds are printed, not asserted.
# Raw TCP is measured with 1 stream each way (iperf3 --bidir's default) and with 4 (closer to the
# socket transport's several sockets per connection); the ratio uses the best raw rate seen.
#
#   tests/netns/bench_net.sh [build-dir]          (default: build; needs root; 77 when it cannot run)
#   env: BENCH_NET=Socket  BENCH_TCP_SECONDS=5  BENCH_TCP_STREAMS="1 4"  BENCH_PERF_ARGS="-n 3 -w 1"
#
# With 2 ranks an all-reduce of S bytes moves S bytes each way per rank (busbw = algbw), so busbw
# is compared with the TCP rate of one direction while the other direction is busy too.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
build=$(cd "$build" && pwd) || exit 2
tcp=$build/bin/tcp_bidir
perf=$build/bin/accl-perf
for b in "$tcp" "$perf"; do [ -x "$b" ] || { echo "$0: $b is missing (ninja tcp_bidir accl-perf)" >&2; exit 2; }; done
net=${BENCH_NET:-Socket}
secs=${BENCH_TCP_SECONDS:-5}
streams=${BENCH_TCP_STREAMS:-"1 4"}
perf_args=${BENCH_PERF_ARGS:-"-n 3 -w 1"}
log=$(mktemp "${TMPDIR:-/tmp}/accl-bench-net.XXXXXX")
trap 'rm -f "$log"' EXIT

# One command per rank: rank 0 serves tcp_bidir on host 0's address, rank 1 connects; then both run
# accl-perf (its process 0 prints the table).
"$here/multihost.sh" -H 2 -P 1 -t 600 -- env NCCL_NET="$net" TCP="$tcp" PERF="$perf" SECS="$secs" \
  STREAMS="$streams" PERF_ARGS="$perf_args" bash -c '
    port=5201
    for n in $STREAMS; do
      if [ "$ACCL_MH_RANK" = 0 ]; then "$TCP" server 10.77.0.1 $port "$SECS" "$n" || exit 1
      else sleep 0.3; "$TCP" client 10.77.0.1 $port "$SECS" "$n" || exit 1; fi
      port=$((port + 1))
      sleep 0.5
    done
    exec "$PERF" -C all_reduce -b 64M -e 256M -f 2 $PERF_ARGS' >"$log" 2>&1
status=$?
[ $status -eq 77 ] && { cat "$log"; exit 77; }
if [ $status -ne 0 ]; then cat "$log"; echo "$0: the run failed (status $status)" >&2; exit $status; fi

# Per stream count: the slower direction of the two ends' results; raw = the best of those.
summary=$(awk '/^tcp_bidir / { for (i = 1; i <= NF; i++) { if ($i == "GB/s") r = $(i - 1); if ($i == "streams") k = $(i - 1) }
                              if (!(k in m) || r < m[k]) m[k] = r; c[k]++ }
               END { best = 0; for (k in m) if (c[k] == 2) { line = line sprintf(" %s-stream: %.3f", k, m[k]); if (m[k] > best) best = m[k] }
                     if (best > 0) printf "%.3f%s\n", best, line }' "$log")
[ -n "$summary" ] || { cat "$log"; echo "$0: no tcp_bidir result" >&2; exit 1; }
read -r raw_min raw_detail <<<"$summary"
grep -E "^tcp_bidir|^# accl:|Avg bus" "$log"
echo
echo "# net vs raw TCP, 2 namespace hosts x 1 rank, NCCL_NET=$net, nproc=$(nproc)"
echo "# raw TCP, both directions busy, slower direction (GB/s, ${secs} s each):$raw_detail; raw = best = $raw_min"
printf "%12s %14s %14s %10s %12s %12s\n" "size(B)" "busbw-oop" "busbw-ip" "raw" "oop/raw" "ip/raw"
awk -v raw="$raw_min" '$1 ~ /^[0-9]+$/ && NF >= 13 {
    printf "%12s %14s %14s %10.3f %12.2f %12.2f\n", $1, $8, $12, raw, $8 / raw, $12 / raw }' "$log"
