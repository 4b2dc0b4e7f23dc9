#!/bin/sh
# run_env_job.sh NPROCS -- COMMAND...
# Starts NPROCS copies of COMMAND as one accl-perf "mpirun-style" job without MPI: each copy gets
# ACCL_PERF_NPROCS/ACCL_PERF_PROC/ACCL_PERF_JOBKEY, the way mpirun's OMPI_COMM_WORLD_* would. Exits with
# process 0's status (the reporter's), or 1 when another copy failed.
n=$1; shift
[ "$1" = "--" ] && shift
key="ctest-$$-$(date +%s)"
pids=""
p=1
while [ "$p" -lt "$n" ]; do
  ACCL_PERF_NPROCS=$n ACCL_PERF_PROC=$p ACCL_PERF_JOBKEY=$key "$@" >/dev/null 2>&1 &
  pids="$pids $!"
  p=$((p + 1))
done
ACCL_PERF_NPROCS=$n ACCL_PERF_PROC=0 ACCL_PERF_JOBKEY=$key "$@"
rc=$?
others=0
for pid in $pids; do
  wait "$pid" || others=1
done
[ "$rc" -ne 0 ] && exit "$rc"
exit $others
