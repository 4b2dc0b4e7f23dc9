#!/usr/bin/env bash
# Net transport vs raw TCP between two namespace hosts, measured in ONE run of multihost.sh (the
# same two namespaces, the same veth + bridge path): first tcp_bidir (raw TCP, both directions busy
# at once, as iperf3 --bidir), then accl-perf all_reduce with one rank per host over NCCL_NET
# (default Socket), 64 MiB to 256 MiB. Prints a table: busbw (out of place / in place), the raw TCP
# rate per direction, busbw / raw, and `nproc`. Not a ctest test: speeds are printed, not asserted.
# Raw TCP is measured with 1 stream each way (iperf3 --bidir's default) and with 4 (closer to the
# socket transport's several sockets per connection); a round's ratio uses its best raw rate.
# On a small shared machine both figures swing by +-20% from one run to the next (raw TCP alone:
# 1.33-1.71 GB/s on 2 cores), so the script runs ROUNDS alternating rounds (raw, then accl-perf)
# and reports each round's ratio and their median.
#
#   tests/netns/bench_net.sh [build-dir]          (default: build; needs root; 77 when it cannot run)
#   env: BENCH_NET=Socket  BENCH_TCP_SECONDS=5  BENCH_TCP_STREAMS="1 4"  BENCH_PERF_ARGS="-n 10 -w 2"
#        BENCH_ROUNDS=5  BENCH_MODE=raw|psk
#
# BENCH_MODE=psk: the cost of encryption instead. Each round runs the same accl-perf all_reduce twice
# in the same namespaces, in clear and then with ACCL_ENCRYPTION_PSK_FILE (TLS 1.3 on every TCP
# connection), and the table gives both busbw figures and psk / plain, per round and their median.
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
perf_args=${BENCH_PERF_ARGS:-"-n 10 -w 2"}
rounds=${BENCH_ROUNDS:-5}
log=$(mktemp "${TMPDIR:-/tmp}/accl-bench-net.XXXXXX")
trap 'rm -f "$log"' EXIT
# The median of v[1..n] (sorts v), for the tables' median rows.
awk_median='function median(v, n,    i, j, t) {
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
  return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
'

if [ "${BENCH_MODE:-raw}" = psk ]; then
  key=$(mktemp "${TMPDIR:-/tmp}/accl-bench-psk.XXXXXX")
  trap 'rm -f "$log" "$key"' EXIT
  head -c 48 /dev/urandom | base64 -w0 >"$key"
  "$here/multihost.sh" -H 2 -P 1 -t 900 -- env NCCL_NET="$net" PERF="$perf" KEY="$key" PERF_ARGS="$perf_args" \
    ROUNDS="$rounds" bash -c '
      for round in $(seq 1 "$ROUNDS"); do
        "$PERF" -C all_reduce -b 64M -e 256M -f 2 $PERF_ARGS | sed "s/^/round=$round mode=plain /"
        [ "${PIPESTATUS[0]}" = 0 ] || exit 1
        ACCL_ENCRYPTION_PSK_FILE="$KEY" "$PERF" -C all_reduce -b 64M -e 256M -f 2 $PERF_ARGS |
          sed "s/^/round=$round mode=psk /"
        [ "${PIPESTATUS[0]}" = 0 ] || exit 1
      done' >"$log" 2>&1
  status=$?
  [ $status -eq 77 ] && { cat "$log"; exit 77; }
  if [ $status -ne 0 ]; then cat "$log"; echo "$0: the run failed (status $status)" >&2; exit $status; fi
  echo "# encryption cost, 2 namespace hosts x 1 rank, NCCL_NET=$net, nproc=$(nproc), $rounds round(s):"
  echo "# all_reduce busbw (GB/s) in clear and with TLS 1.3 PSK (ACCL_ENCRYPTION_PSK_FILE), same run"
  awk "$awk_median"'
    /^round=[0-9]+ mode=(plain|psk) +[0-9]+ / && NF >= 15 {
      split($1, a, "="); k = a[2]; split($2, b, "="); m = b[2]; size = $3
      oop[k, m, size] = $10; ip[k, m, size] = $14
      if (!(size in seen)) { seen[size] = 1; sizes[++nsizes] = size }
      if (k > rounds) rounds = k
    }
    END {
      printf "%6s %12s %10s %10s %9s %9s %9s %9s\n", "round", "size(B)", "plain-oop", "psk-oop", "plain-ip", "psk-ip",
             "oop-ratio", "ip-ratio"
      for (s = 1; s <= nsizes; s++) {
        size = sizes[s]; n = 0
        for (k = 1; k <= rounds; k++) {
          if (!((k, "plain", size) in oop) || !((k, "psk", size) in oop)) continue
          ro = oop[k, "psk", size] / oop[k, "plain", size]; ri = ip[k, "psk", size] / ip[k, "plain", size]
          printf "%6d %12s %10.2f %10.2f %9.2f %9.2f %9.2f %9.2f\n", k, size, oop[k, "plain", size],
                 oop[k, "psk", size], ip[k, "plain", size], ip[k, "psk", size], ro, ri
          n++; vo[n] = ro; vi[n] = ri
        }
        if (n) printf "%6s %12s %10s %10s %9s %9s %9.2f %9.2f\n", "median", size, "", "", "", "", median(vo, n), median(vi, n)
      }
      if (nsizes == 0) { print "no complete round in the log" > "/dev/stderr"; exit 1 }
    }' "$log" || { cat "$log"; exit 1; }
  exit 0
fi

# One command per rank, for each round: rank 0 serves tcp_bidir on host 0's address, rank 1
# connects; then both run accl-perf (its process 0 prints the table). Every line a rank prints is
# tagged "round=<k>" so that each round's raw rate and table stay together.
"$here/multihost.sh" -H 2 -P 1 -t 900 -- env NCCL_NET="$net" TCP="$tcp" PERF="$perf" SECS="$secs" \
  STREAMS="$streams" PERF_ARGS="$perf_args" ROUNDS="$rounds" bash -c '
    port=5201
    for round in $(seq 1 "$ROUNDS"); do
      for n in $STREAMS; do
        if [ "$ACCL_MH_RANK" = 0 ]; then "$TCP" server 10.77.0.1 $port "$SECS" "$n" || exit 1
        else sleep 0.3; "$TCP" client 10.77.0.1 $port "$SECS" "$n" || exit 1; fi | sed "s/^/round=$round /"
        [ "${PIPESTATUS[0]}" = 0 ] || exit 1
        port=$((port + 1))
        sleep 0.5
      done
      "$PERF" -C all_reduce -b 64M -e 256M -f 2 $PERF_ARGS | sed "s/^/round=$round /"
      [ "${PIPESTATUS[0]}" = 0 ] || exit 1
    done' >"$log" 2>&1
status=$?
[ $status -eq 77 ] && { cat "$log"; exit 77; }
if [ $status -ne 0 ]; then cat "$log"; echo "$0: the run failed (status $status)" >&2; exit $status; fi

grep -E "^round=[0-9]+ (tcp_bidir|# accl:|# Avg bus)" "$log"
echo
echo "# net vs raw TCP, 2 namespace hosts x 1 rank, NCCL_NET=$net, nproc=$(nproc), $rounds round(s)"
echo "# raw1 / raw (per round): the slower direction with both directions busy, ${secs} s each, over 1 stream"
echo "# each way (iperf3 --bidir's default) / the best over stream counts ($streams); ratios = busbw / that"
echo "# round's raw1 or raw. Per size, the median row: oop/raw1 compares with iperf3 --bidir as it runs"
echo "# by default; oop/raw and ip/raw with the best raw rate seen (the stricter figure)."
awk "$awk_median"'
  /^round=[0-9]+ tcp_bidir / {
    split($1, a, "="); k = a[2]
    for (i = 2; i <= NF; i++) { if ($i == "GB/s") r = $(i - 1); if ($i == "streams") n = $(i - 1) }
    key = k SUBSEP n
    if (!(key in slow) || r < slow[key]) slow[key] = r
    ends[key]++
  }
  /^round=[0-9]+ +[0-9]+ / && NF >= 14 {
    split($1, a, "="); k = a[2]; size = $2
    oop[k, size] = $9; ip[k, size] = $13
    if (!(size in seen)) { seen[size] = 1; sizes[++nsizes] = size }
    if (k > rounds) rounds = k
  }
  END {
    for (key in slow) if (ends[key] == 2) {
      split(key, b, SUBSEP)
      if (slow[key] > raw[b[1]]) raw[b[1]] = slow[key]
      if (b[2] == 1) raw1[b[1]] = slow[key]
    }
    printf "%6s %12s %9s %9s %7s %7s %8s %8s %8s\n", "round", "size(B)", "busbw-oop", "busbw-ip", "raw1", "raw",
           "oop/raw1", "oop/raw", "ip/raw"
    bad = 0
    for (s = 1; s <= nsizes; s++) {
      size = sizes[s]; m = 0
      for (k = 1; k <= rounds; k++) {
        if (!((k, size) in oop) || !(k in raw)) continue
        ro = oop[k, size] / raw[k]; ri = ip[k, size] / raw[k]; r1 = (k in raw1) ? oop[k, size] / raw1[k] : 0
        printf "%6d %12s %9.2f %9.2f %7.3f %7.3f %8.2f %8.2f %8.2f\n", k, size, oop[k, size], ip[k, size], raw1[k],
               raw[k], r1, ro, ri
        m++; vo[m] = ro; vi[m] = ri; v1[m] = r1
      }
      if (m == 0) { bad = 1; continue }
      printf "%6s %12s %9s %9s %7s %7s %8.2f %8.2f %8.2f\n", "median", size, "", "", "", "", median(v1, m), median(vo, m),
             median(vi, m)
    }
    if (nsizes == 0 || bad) { print "no complete round in the log" > "/dev/stderr"; exit 1 }
  }' "$log" || { cat "$log"; exit 1; }
