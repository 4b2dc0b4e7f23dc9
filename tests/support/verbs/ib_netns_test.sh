#!/bin/bash
# The IB NetDevice over the verbs emulator between two network namespaces joined by a veth pair
# (label netns; needs root and `ip netns`, else exits 77 = skipped). Checks that 16 MiB messages
# cross the namespaces' own link intact, and that with the link set down mid-run the sender's next
# message fails with ncclRemoteError (the emulator's retry exceeded) within 20 s, naming the peer.
#   ib_netns_test.sh <accl_ib_netns_peer> <libaccl-verbs-emu.so>
set -u
peer=$1 emu=$2
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! ip netns list >/dev/null 2>&1; then
  echo "SKIP: needs root and ip netns"
  exit 77
fi
a=accl-ibA-$$ b=accl-ibB-$$ dir=$(mktemp -d /tmp/accl-ib-netns.XXXXXX)
cleanup() {
  [ -n "${spid:-}" ] && kill "$spid" 2>/dev/null
  ip netns del "$a" 2>/dev/null
  ip netns del "$b" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$a" && ip netns add "$b" &&
  ip link add vib$$a netns "$a" type veth peer name vib$$b netns "$b" &&
  ip -n "$a" addr add 10.231.7.1/24 dev vib$$a && ip -n "$b" addr add 10.231.7.2/24 dev vib$$b &&
  ip -n "$a" link set vib$$a up && ip -n "$b" link set vib$$b up &&
  ip -n "$a" link set lo up && ip -n "$b" link set lo up || { echo "SKIP: cannot build the namespaces"; exit 77; }
export ACCL_IBVERBS_LIB=$emu NCCL_DEBUG=WARN
status=0

# 1. Four messages across the link.
ip netns exec "$b" "$peer" server "$dir" 4 > "$dir/server1.log" 2>&1 & spid=$!
ip netns exec "$a" "$peer" client "$dir" 4 > "$dir/client1.log" 2>&1; crc=$?
wait "$spid"; src=$?; spid=
cat "$dir/client1.log" "$dir/server1.log"
[ $crc = 0 ] && [ $src = 0 ] || { echo "FAIL: transfer across namespaces (client $crc, server $src)"; status=1; }

# 2. The link goes down after two messages: the third send must fail with ncclRemoteError.
rm -f "$dir"/handle "$dir"/ready-to-cut "$dir"/cut-done
ip netns exec "$b" "$peer" server "$dir" 4 > "$dir/server2.log" 2>&1 & spid=$!
ip netns exec "$a" "$peer" client "$dir" 4 cut > "$dir/client2.log" 2>&1 & cpid=$!
for _ in $(seq 300); do [ -e "$dir/ready-to-cut" ] && break; sleep 0.1; done
ip -n "$a" link set vib$$a down
touch "$dir/cut-done"
wait "$cpid"; crc=$?
cat "$dir/client2.log"
[ $crc = 0 ] || { echo "FAIL: the send over the cut link did not end in ncclRemoteError in time (client $crc)"; status=1; }
grep -q "10.231.7.2" "$dir/client2.log" || { echo "FAIL: the error does not name the peer 10.231.7.2"; status=1; }
[ $status = 0 ] && echo "PASS"
exit $status
