#!/usr/bin/env bash
# Runs a command under tests/netns/multihost.sh (H namespace hosts x P ranks) for the ctest tests
# of label netns, and checks what the run left behind:
#   * no namespace of the run (acclmh<pid>-*) remains, and no process of the run (one whose
#     environment holds ACCL_MH_NETNS=acclmh<pid>) is still alive to hold a socket;
#   * no new accl entry in /dev/shm (accl's shared memory is unnamed; a named leftover is a bug);
#   * with -g REGEX: at least -m N (default 1) lines of the ranks' output match REGEX (e.g. logged
#     rejections); -g may be repeated, each -m applying to the -g before it;
#   * with -n: every connection between ranks on different hosts went through the net transport
#     ("Channel .. : a[..] -> b[..] via NET/..." lines, logged with NCCL_DEBUG=INFO and
#     NCCL_DEBUG_SUBSYS=INIT, which -n sets), and there was at least one;
#   * with -F: the command must fail by itself (a status other than 0, 77 and multihost.sh's
#     deadline 124) and leave the -g lines (say,
#     the error it must fail with); the -n / -N checks are skipped (connections may never form).
#   * with -K: every rank gets ACCL_ENCRYPTION_PSK_FILE, a fresh random key in the run's directory
#     (TLS 1.3 on every TCP connection between ranks);
#   * with -C present|absent -c WIRE_CAPTURE: wire_capture runs in the switch namespace for the whole
#     run and counts known bytes in every frame between the hosts: the markers -M NAME=MARKER (text,
#     or hex:BYTES; repeatable), by default payload=ACCL-WIRE-MARK: (net_matrix_rank crypt wire sends
#     it). present = every marker is seen in clear at least once, absent = none is (and at least 100
#     frames were seen either way). The ranks wait for the capture (ACCL_NM_CAPTURE_READY).
# Each run gets a fresh directory in ACCL_NM_DIR (the fault time, the unique-id file) and
# ACCL_NM_ID_FILE, removed afterwards.
#
#   tests/netns/net_matrix.sh [-H hosts] [-P ranks-per-host] [-t seconds] [-n | -N net] [-g regex [-m count]] [-F]
#                             [-K] [-C present|absent -c wire_capture [-M name=marker]...] -- command...
#
# Exit status: multihost.sh's (77 when namespaces cannot be made here: the test is skipped), or 1
# when the run passed but a check above failed. With -F: 0 when the run failed as expected and
# every check passed, else 1 (77 still means skipped).
set -u
here=$(cd "$(dirname "$0")" && pwd)
mh_args=()
grep_res=()
min_list=()
need_net=0
per_host=1
want_net=""
expect_fail=0
psk=0
capture=""
capture_bin=""
markers=()
while getopts "H:P:t:g:m:nN:FKC:c:M:" opt; do
  case "$opt" in
    H | t) mh_args+=("-$opt" "$OPTARG") ;;
    P) mh_args+=("-P" "$OPTARG"); per_host=$OPTARG ;;
    n) need_net=1 ;;
    N) need_net=1; want_net=$OPTARG ;;
    g) grep_res+=("$OPTARG"); min_list+=(1) ;;
    m) [ ${#min_list[@]} -gt 0 ] && min_list[${#min_list[@]}-1]=$OPTARG ;;
    F) expect_fail=1 ;;
    K) psk=1 ;;
    C) capture=$OPTARG ;;
    c) capture_bin=$OPTARG ;;
    M) markers+=("$OPTARG") ;;
    *) echo "usage: $0 [-H hosts] [-P ranks-per-host] [-t seconds] [-n | -N net] [-g regex [-m count]] [-F] [-K] [-C present|absent -c wire_capture [-M name=marker]...] -- command..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
[ $# -ge 1 ] || { echo "$0: no command" >&2; exit 2; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/accl-netmatrix.XXXXXX") || exit 1
shm_before=$(ls /dev/shm 2>/dev/null | grep -i accl | sort)
trap 'rm -rf "$dir"' EXIT

if [ $need_net -eq 1 ]; then export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT; fi
if [ $psk -eq 1 ]; then
  (umask 077 && head -c 48 /dev/urandom | base64 -w0 >"$dir/psk") || exit 1
  export ACCL_ENCRYPTION_PSK_FILE="$dir/psk"
fi
if [ -n "$capture" ]; then
  case "$capture" in present | absent) ;; *) echo "$0: -C present|absent" >&2; exit 2 ;; esac
  [ -x "$capture_bin" ] || { echo "$0: -C needs -c <wire_capture binary>" >&2; exit 2; }
  export ACCL_NM_CAPTURE_READY="$dir/capture.ready"
fi
ACCL_NM_DIR="$dir" ACCL_NM_ID_FILE="$dir/unique_id" "$here/multihost.sh" "${mh_args[@]}" -- "$@" \
  >"$dir/out.log" 2>&1 &
mh=$!
cap=""
if [ -n "$capture" ]; then
  # The switch namespace appears once multihost.sh has begun; the ranks wait for capture.ready.
  for _ in $(seq 1 200); do ip netns list 2>/dev/null | grep -q "^acclmh$mh-sw" && break; sleep 0.05; done
  [ ${#markers[@]} -eq 0 ] && markers=("payload=ACCL-WIRE-MARK:")
  ip netns exec "acclmh$mh-sw" "$capture_bin" "$dir/capture.ready" "$dir/capture.txt" "${markers[@]}" &
  cap=$!
fi
wait "$mh"
status=$?
if [ -n "$cap" ]; then kill -TERM "$cap" 2>/dev/null; wait "$cap"; fi
cat "$dir/out.log"
[ $status -eq 77 ] && exit 77
if [ $expect_fail -eq 1 ]; then need_net=0; want_net=""; fi

bad=0
left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep "^acclmh$mh-")
if [ -n "$left" ]; then echo "$0: FAIL: namespaces left behind: $left" >&2; bad=1; fi
procs=""
for _ in 1 2 3 4 5 6 7 8 9 10; do  # SIGKILLed processes may take a moment to go
  procs=$(grep -lzsx "ACCL_MH_NETNS=acclmh$mh" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | tr '\n' ' ')
  [ -z "$procs" ] && break
  sleep 0.2
done
if [ -n "$procs" ]; then echo "$0: FAIL: processes of the run still alive: $procs" >&2; bad=1; fi
shm_after=$(ls /dev/shm 2>/dev/null | grep -i accl | sort)
new_shm=$(comm -13 <(echo "$shm_before") <(echo "$shm_after") | grep .)
if [ -n "$new_shm" ]; then echo "$0: FAIL: new accl entries in /dev/shm: $new_shm" >&2; bad=1; fi
if [ -n "$capture" ]; then
  read -r frames _ hits <<<"$(head -1 "$dir/capture.txt" 2>/dev/null | tr '=' ' ' | awk '{print $2, $4, $6}')"
  per_marker=$(tail -n +2 "$dir/capture.txt" 2>/dev/null | tr '=' ' ' | awk '{printf "%s%s %s", sep, $1, $3; sep = ", "}')
  echo "$0: capture: ${frames:-?} frames between the hosts, markers seen in clear: ${per_marker:-?} (want $capture)"
  if [ -z "${hits:-}" ] || [ "${frames:-0}" -lt 100 ]; then echo "$0: FAIL: the capture saw too little" >&2; bad=1
  elif [ "$capture" = present ]; then
    missing=$(tail -n +2 "$dir/capture.txt" | tr '=' ' ' | awk '$3 == 0 {print $1}' | tr '\n' ' ')
    if [ -n "$missing" ]; then echo "$0: FAIL: never seen in clear: $missing(the capture would miss a leak)" >&2; bad=1; fi
  elif [ "$capture" = absent ] && [ "$hits" -ne 0 ]; then echo "$0: FAIL: known bytes travel in clear: $per_marker" >&2; bad=1
  fi
fi
for i in "${!grep_res[@]}"; do
  grep_re=${grep_res[$i]}
  min_matches=${min_list[$i]}
  matches=$(grep -Ec "$grep_re" "$dir/out.log")
  echo "$0: $matches output lines match /$grep_re/ (at least $min_matches wanted)"
  if [ "$matches" -lt "$min_matches" ]; then echo "$0: FAIL: too few lines match /$grep_re/" >&2; bad=1; fi
done
if [ $need_net -eq 1 ]; then
  # "... Channel 00 : 1[0] -> 0[0] via NET/Socket/0": ranks r live in host r / per_host.
  verdict=$(awk -v P="$per_host" '
    match($0, / ([0-9]+)\[[0-9]+\] -> ([0-9]+)\[[0-9]+\] via [^ ]+/) {
      m = substr($0, RSTART, RLENGTH)
      gsub(/[][]/, " ", m)
      split(m, f)
      a = f[1]; b = f[4]; via = f[7]
      if (int(a / P) == int(b / P)) next
      cross++
      if (via !~ /^NET/) { bad++; if (!ex) ex = $0 }
      kinds[via]++
    }
    END {
      for (k in kinds) s = s " " k " x" kinds[k]
      printf "%d %d%s\n", cross + 0, bad + 0, s
      if (ex) print ex
    }' "$dir/out.log")
  read -r cross nonnet rest <<<"$(head -1 <<<"$verdict")"
  echo "$0: connections between hosts: $cross ($rest )"
  if [ "$cross" -eq 0 ]; then echo "$0: FAIL: no connection between hosts was logged (NCCL_DEBUG_SUBSYS=INIT)" >&2; bad=1; fi
  if [ "$nonnet" -ne 0 ]; then
    echo "$0: FAIL: $nonnet connections between hosts did not use the net transport, e.g.: $(sed -n 2p <<<"$verdict")" >&2
    bad=1
  fi
fi
if [ -n "$want_net" ]; then
  used=$(grep -oE "NET: rank [0-9]+ uses network [^,]+," "$dir/out.log" | sed -E 's/.*uses network (.*),/\1/' | sort | uniq -c |
         awk '{printf "%s%s x%s", sep, $2, $1; sep = ", "}')
  echo "$0: networks used: ${used:-none logged} (want $want_net)"
  if [ -z "$used" ] || grep -qvE "^$want_net x[0-9]+$" <<<"$(tr ',' '\n' <<<"$used" | sed 's/^ //')"; then
    echo "$0: FAIL: the ranks did not all use network $want_net" >&2
    bad=1
  fi
fi
if [ $expect_fail -eq 1 ]; then
  if [ $status -eq 0 ]; then echo "$0: FAIL: the run passed, but it was expected to fail" >&2; exit 1; fi
  if [ $status -eq 124 ]; then echo "$0: FAIL: the run hung until its deadline instead of failing with an error" >&2; exit 1; fi
  [ $bad -eq 0 ] && echo "$0: passed: the run failed (status $status) as expected; nothing left behind"
  exit $bad
fi
if [ $status -ne 0 ]; then echo "$0: the run failed with status $status" >&2; exit $status; fi
[ $bad -eq 0 ] && echo "$0: passed; nothing left behind (namespaces acclmh$mh-*, their processes, /dev/shm)"
exit $bad
