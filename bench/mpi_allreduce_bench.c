/* mpi_allreduce_bench: the MPI_Allreduce reference for bench/compare-openmpi. Float sum over a size sweep,
 * timed like accl-perf (warmup, then `iters` calls timed as a whole, time averaged over the ranks), with a
 * closed-form correctness check. Prints one line per size:
 *   size_bytes count time_us algbw_GBs busbw_GBs wrong
 * (lines starting with '#' are comments). Flags: -b min -e max (K/M/G suffixes), -f factor, -n iters,
 * -w warmup iters. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t parse_size(const char* s) {
  char* end = NULL;
  double v = strtod(s, &end);
  switch (end && *end ? *end : 0) {
    case 'K': case 'k': v *= 1024.0; break;
    case 'M': case 'm': v *= 1024.0 * 1024.0; break;
    case 'G': case 'g': v *= 1024.0 * 1024.0 * 1024.0; break;
    default: break;
  }
  return v < 0 ? 0 : (size_t)v;
}

int main(int argc, char** argv) {
  size_t minBytes = 8, maxBytes = 256u << 20, factor = 4;
  int iters = 20, warmup = 5;
  int rank = 0, nranks = 1;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-b")) minBytes = parse_size(argv[i + 1]);
    else if (!strcmp(argv[i], "-e")) maxBytes = parse_size(argv[i + 1]);
    else if (!strcmp(argv[i], "-f")) factor = (size_t)atol(argv[i + 1]);
    else if (!strcmp(argv[i], "-n")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-w")) warmup = atoi(argv[i + 1]);
  }
  if (factor < 2) factor = 2;
  if (iters < 1) iters = 1;
  size_t maxCount = maxBytes / sizeof(float);
  float* send = malloc((maxCount ? maxCount : 1) * sizeof(float));
  float* recv = malloc((maxCount ? maxCount : 1) * sizeof(float));
  if (!send || !recv) {
    fprintf(stderr, "mpi_allreduce_bench: out of memory for %zu bytes\n", maxBytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0) {
    printf("# mpi_allreduce_bench: %d ranks, float sum, iters %d, warmup %d\n", nranks, iters, warmup);
    printf("# %10s %12s %10s %10s %10s %6s\n", "size(B)", "count", "time(us)", "algbw", "busbw", "wrong");
  }
  int failed = 0;
  for (size_t bytes = minBytes; bytes <= maxBytes; bytes = bytes ? bytes * factor : 1) {
    size_t count = bytes / sizeof(float);
    /* Small integers: every partial sum is exact, so the result is exact in any order. */
    for (size_t i = 0; i < count; ++i) send[i] = (float)((rank + i) % 7);
    for (int i = 0; i < warmup; ++i) MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double sec = (MPI_Wtime() - t0) / iters;
    long long wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < nranks; ++r) want += (float)((r + i) % 7);
      if (recv[i] != want) ++wrong;
    }
    double sum = 0;
    long long wrongAll = 0;
    MPI_Allreduce(&sec, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&wrong, &wrongAll, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    double avg = sum / nranks;
    double algbw = avg > 0 ? (double)(count * sizeof(float)) / 1e9 / avg : 0;
    double busbw = algbw * 2.0 * (nranks - 1) / nranks;
    if (wrongAll) failed = 1;
    if (rank == 0) {
      printf("  %10zu %12zu %10.2f %10.4f %10.4f %6lld\n", count * sizeof(float), count, avg * 1e6, algbw, busbw,
             wrongAll);
      fflush(stdout);
    }
    if (bytes == 0 && maxBytes == 0) break;
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return failed ? 7 : 0;
}
