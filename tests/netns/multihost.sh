#!/usr/bin/env bash
# Multi-node on one machine: builds H network namespaces ("hosts") joined by veth pairs to a
# bridge that lives in a namespace of its own, runs P copies of a command in each host, and tears
# everything down afterwards — also when the command fails, times out or this script is killed.
# Addresses exist only inside the namespaces this script made (10.77.0.0/24), never elsewhere.
#
#   tests/netns/multihost.sh [-H hosts] [-P ranks-per-host] [-t seconds] [-k] -- command [args...]
#
# Every copy of the command gets, besides the caller's environment:
#   NCCL_HOSTID=accl-host<h>      each namespace is a different node to accl (and to NCCL)
#   NCCL_SOCKET_IFNAME=mh0        the namespace's only real interface
#   NCCL_COMM_ID=10.77.0.1:<port> the bootstrap root, hosted by rank 0 in host 0
#   ACCL_MH_RANK, ACCL_MH_NRANKS, ACCL_MH_LOCAL_RANK, ACCL_MH_HOST, ACCL_MH_NHOSTS
#   ACCL_PERF_PROC, ACCL_PERF_NPROCS, ACCL_PERF_LOCAL_PROC, ACCL_PERF_JOBKEY (accl-perf's launcher)
#   ACCL_PERF_RDV=10.77.0.1:<port+1>  accl-perf's process 0 listens there, the others connect there
#                                 (its rendezvous file cannot cross namespaces)
#   ACCL_MH_NETNS=<prefix>        host h is the namespace <prefix>-h<h>; its link is mh0 there,
#                                 so a test can cut it: ip netns exec <prefix>-h1 ip link set mh0 down
# Rank r runs in host r / P. Its output goes to stdout/stderr prefixed by nothing (the command's
# own lines); with -k the namespaces are kept until the script exits (for debugging: it waits).
#
# Exit status: the first non-zero status among the ranks (124 when the deadline killed them),
# 77 when namespaces cannot be made here (not root, no `ip`), 2 on bad usage.
set -u

hosts=2
per_host=1
deadline=120
keep=0
usage() { echo "usage: $0 [-H hosts] [-P ranks-per-host] [-t seconds] [-k] -- command [args...]" >&2; exit 2; }
while getopts "H:P:t:kh" opt; do
  case "$opt" in
    H) hosts=$OPTARG ;;
    P) per_host=$OPTARG ;;
    t) deadline=$OPTARG ;;
    k) keep=1 ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
[ $# -ge 1 ] || usage
for v in "$hosts" "$per_host" "$deadline"; do
  case "$v" in ''|*[!0-9]*) echo "$0: '$v' is not a positive integer" >&2; exit 2 ;; esac
done
if [ "$hosts" -lt 1 ] || [ "$hosts" -gt 200 ] || [ "$per_host" -lt 1 ] || [ "$deadline" -lt 1 ]; then
  echo "$0: hosts must be 1..200, ranks per host and seconds at least 1" >&2
  exit 2
fi

if [ "$(id -u)" -ne 0 ]; then echo "$0: skipped: network namespaces need root" >&2; exit 77; fi
if ! command -v ip >/dev/null 2>&1; then echo "$0: skipped: the 'ip' tool (iproute2) is missing" >&2; exit 77; fi

prefix="acclmh$$"
switch="$prefix-sw"
pids=()

teardown() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix-"); do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
}
trap teardown EXIT
trap 'exit 130' INT TERM

fail_setup() { echo "$0: skipped: cannot build the namespaces: $1" >&2; exit 77; }
ip netns add "$switch" 2>/dev/null || fail_setup "ip netns add refused (no CAP_SYS_ADMIN?)"
ip -n "$switch" link add br0 type bridge || fail_setup "no bridge support"
ip -n "$switch" link set br0 up
ip -n "$switch" link set lo up
for ((h = 0; h < hosts; h++)); do
  ns="$prefix-h$h"
  ip netns add "$ns" || fail_setup "ip netns add $ns"
  ip link add "${prefix}v$h" netns "$switch" type veth peer name mh0 netns "$ns" ||
    fail_setup "veth pair for host $h"
  ip -n "$switch" link set "${prefix}v$h" master br0 up
  ip -n "$ns" addr add "10.77.0.$((h + 1))/24" dev mh0
  ip -n "$ns" link set mh0 up
  ip -n "$ns" link set lo up
done

port=$((20000 + $$ % 20000))
nranks=$((hosts * per_host))
for ((r = 0; r < nranks; r++)); do
  h=$((r / per_host))
  ip netns exec "$prefix-h$h" env \
    NCCL_HOSTID="accl-host$h" NCCL_SOCKET_IFNAME=mh0 NCCL_COMM_ID="10.77.0.1:$port" \
    ACCL_MH_RANK=$r ACCL_MH_NRANKS=$nranks ACCL_MH_LOCAL_RANK=$((r % per_host)) \
    ACCL_MH_HOST=$h ACCL_MH_NHOSTS=$hosts ACCL_MH_NETNS="$prefix" \
    ACCL_PERF_PROC=$r ACCL_PERF_NPROCS=$nranks ACCL_PERF_LOCAL_PROC=$((r % per_host)) \
    ACCL_PERF_JOBKEY="$prefix" ACCL_PERF_RDV="10.77.0.1:$((port + 1))" \
    "$@" &
  pids+=($!)
done

# Wait for every rank, up to the deadline.
status=0
end=$((SECONDS + deadline))
remaining=("${pids[@]}")
while [ ${#remaining[@]} -gt 0 ]; do
  next=()
  for p in "${remaining[@]}"; do
    if kill -0 "$p" 2>/dev/null; then next+=("$p"); continue; fi
    wait "$p"
    rc=$?
    [ $status -eq 0 ] && [ $rc -ne 0 ] && status=$rc
  done
  remaining=("${next[@]}")
  [ ${#remaining[@]} -eq 0 ] && break
  if [ $SECONDS -ge $end ]; then
    echo "$0: deadline of ${deadline}s reached; killing ${#remaining[@]} rank(s)" >&2
    for p in "${remaining[@]}"; do kill -KILL "$p" 2>/dev/null; done
    status=124
    break
  fi
  sleep 0.1
done
if [ $keep -eq 1 ]; then echo "$0: keeping $prefix-* until Enter" >&2; read -r _; fi
exit $status
