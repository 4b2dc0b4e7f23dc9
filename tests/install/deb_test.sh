#!/usr/bin/env bash
# ctest install.deb: `cpack -G DEB` from the build tree into a temporary folder (uncompressed, for
# speed), then checks the package as dpkg would see it: files under /opt/accl (library, header,
# tools, *_perf names, pkg-config, CMake packages), Provides: libnccl2 and no Conflicts, the
# ld.so.conf.d conffile and the ldconfig trigger; and that ldconfig, reading the packaged
# ld.so.conf.d entry beside the multiarch one whose folder holds another libnccl.so.2 (where
# NVIDIA's libnccl2 installs it), resolves libnccl.so.2 to accl's.
# Skips (77) without cpack, dpkg-deb or ldconfig.
# Usage: deb_test.sh BUILD_DIR CPACK HAVE_PERF(0|1)
set -uo pipefail
build=$1 cpack=$2 have_perf=$3
for tool in "$cpack" dpkg-deb ldconfig; do
  command -v "$tool" >/dev/null 2>&1 || { echo "deb test: skipped: no $tool"; exit 77; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/accl-deb-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "deb test: FAILED: $*"; failures=$((failures + 1)); }
t0=$(date +%s)
if ! "$cpack" --config "$build/CPackConfig.cmake" -G DEB -B "$work/out" -D CPACK_DEBIAN_COMPRESSION_TYPE=none >"$work/cpack.log" 2>&1; then
  tail -n 30 "$work/cpack.log"; echo "deb test: FAILED: cpack"; exit 1
fi
deb=$(ls "$work"/out/accl_*.deb 2>/dev/null | head -n 1)
[ -f "$deb" ] || { cat "$work/cpack.log"; echo "deb test: FAILED: no accl_*.deb"; exit 1; }
echo "deb test: $(basename "$deb"), $(($(stat -c %s "$deb") / 1024)) KiB, cpack $(($(date +%s) - t0)) s"

dpkg-deb -f "$deb" Provides | grep -q '^libnccl2 (= ' || fail "Provides: $(dpkg-deb -f "$deb" Provides)"
dpkg-deb -f "$deb" Conflicts Replaces | grep -q . && fail "Conflicts/Replaces set: $(dpkg-deb -f "$deb" Conflicts Replaces)"
dpkg-deb -x "$deb" "$work/root" && dpkg-deb -e "$deb" "$work/control" || { fail "dpkg-deb cannot unpack"; exit 1; }
root=$work/root
expect=(opt/accl/include/nccl.h opt/accl/lib/libnccl.so.2 opt/accl/lib/libnccl_static.a
        opt/accl/lib/pkgconfig/nccl.pc opt/accl/lib/cmake/NCCL/NCCLConfig.cmake opt/accl/lib/cmake/accl/acclConfig.cmake
        opt/accl/bin/accl-info opt/accl/bin/accl-topo opt/accl/bin/accl-tune opt/accl/bin/accl-comm-demo
        opt/accl/bin/accl-ras etc/ld.so.conf.d/00-accl.conf)
[ "$have_perf" = 1 ] && expect+=(opt/accl/bin/accl-perf opt/accl/bin/all_reduce_perf opt/accl/bin/sendrecv_perf)
for f in "${expect[@]}"; do [ -e "$root/$f" ] || [ -L "$root/$f" ] || fail "not in the package: /$f"; done
grep -qx /etc/ld.so.conf.d/00-accl.conf "$work/control/conffiles" 2>/dev/null || fail "00-accl.conf is not a conffile"
grep -qx 'activate-noawait ldconfig' "$work/control/triggers" 2>/dev/null || fail "no ldconfig trigger"
libdir=$(grep -v '^#' "$root/etc/ld.so.conf.d/00-accl.conf" | head -n 1)
[ "$libdir" = /opt/accl/lib ] || fail "00-accl.conf names '$libdir', not /opt/accl/lib"

# The library path as Debian builds it: /etc/ld.so.conf includes /etc/ld.so.conf.d/*.conf in name
# order, where x86_64-linux-gnu.conf (or another multiarch name) lists the folder NVIDIA's libnccl2
# installs into. Here that folder holds another libnccl.so.2 and the package's file names $root.
mkdir -p "$work/multiarch" "$work/conf.d"
cp "$root/opt/accl/lib/libnccl.so.2" "$work/multiarch/libnccl.so.2.0.0-other"
ln -s libnccl.so.2.0.0-other "$work/multiarch/libnccl.so.2"
sed "s|^/|$root/|" "$root/etc/ld.so.conf.d/00-accl.conf" >"$work/conf.d/00-accl.conf"
echo "$work/multiarch" >"$work/conf.d/$(uname -m)-linux-gnu.conf"
echo "$work/multiarch" >"$work/conf.d/libc.conf"
echo "include $work/conf.d/*.conf" >"$work/ld.so.conf"
if ldconfig -X -f "$work/ld.so.conf" -C "$work/ld.so.cache" >"$work/ldconfig.log" 2>&1; then
  first=$(ldconfig -p -C "$work/ld.so.cache" | awk '$1 == "libnccl.so.2" { print $NF; exit }')
  [ "$first" = "$root/opt/accl/lib/libnccl.so.2" ] || fail "ldconfig resolves libnccl.so.2 to $first"
else
  fail "ldconfig: $(cat "$work/ldconfig.log")"
fi
echo "deb test: $failures failure(s) in $(($(date +%s) - t0)) s"
[ "$failures" -eq 0 ]
