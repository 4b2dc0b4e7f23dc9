/*
 * c_program.c — an ordinary C user of NCCL and the CUDA runtime, nothing more.
 *
 * It is written the way someone without MPI would write it: the parent makes the unique id,
 * forks one process per rank, and every rank picks a GPU, joins the communicator and runs
 * all-reduce, all-gather, reduce-scatter, broadcast and a send/recv ring on two non-blocking
 * streams (ordered by events where one step reads what the other stream wrote), then captures an
 * all-reduce into a CUDA graph and replays it with fresh input. Every result is compared with its
 * closed form (small integers, so float sums are exact). The parent reaps the ranks against a
 * deadline. It knows nothing of the library or GPU behind the API, so it runs unchanged on NCCL
 * with real GPUs or on accl with its virtual GPU:
 *
 *   gcc -std=c11 -O1 -g -Wall -Wextra -I include -I /usr/local/cuda/include \
 *       tests/vgpu/c_program.c -L build/lib -lnccl -L /usr/local/cuda/lib64 -lcudart -o /tmp/c_program
 *   LD_LIBRARY_PATH=build/vgpu:build/lib ACCL_BACKEND=cuda /tmp/c_program [ranks=4] [deadline_s=240]
 *
 * Exit status: 0 all ranks passed, 1 a wrong value, 2 a failed CUDA/NCCL call, 3 deadline passed.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nccl.h"

static int g_rank = -1;
static ncclComm_t g_comm = NULL;

#define CUDA(call)                                                                              \
  do {                                                                                          \
    cudaError_t e_ = (call);                                                                    \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "rank %d: %s failed at %s:%d: %s\n", g_rank, #call, __FILE__, __LINE__,  \
              cudaGetErrorString(e_));                                                          \
      exit(2);                                                                                  \
    }                                                                                           \
  } while (0)

#define NCCL(call)                                                                              \
  do {                                                                                          \
    ncclResult_t r_ = (call);                                                                   \
    if (r_ != ncclSuccess) {                                                                    \
      fprintf(stderr, "rank %d: %s failed at %s:%d: %s (last error: %s)\n", g_rank, #call,     \
              __FILE__, __LINE__, ncclGetErrorString(r_), ncclGetLastError(g_comm));            \
      exit(2);                                                                                  \
    }                                                                                           \
  } while (0)

/* The shape every buffer shares: element i is a multiple of (i % 97 + 1). */
static float pattern(size_t i) { return (float)(i % 97 + 1); }

/* Compares count elements of got with want_scale * pattern(i + offset); exits 1 on a mismatch. */
static void check(const char* step, size_t count, const float* got, size_t offset, float want_scale) {
  for (size_t i = 0; i < count; ++i) {
    float want = want_scale * pattern(i + offset);
    if (got[i] != want) {
      fprintf(stderr, "rank %d: %s MISMATCH at index %zu: got %g, want %g\n", g_rank, step, i, got[i], want);
      exit(1);
    }
  }
  printf("rank %d: %s ok\n", g_rank, step);
}

static void fetch(float* host, const float* dev, size_t count) {
  CUDA(cudaMemcpy(host, dev, count * sizeof(float), cudaMemcpyDeviceToHost));
}

static int run_rank(int rank, int n, ncclUniqueId id) {
  g_rank = rank;
  int devices = 0;
  CUDA(cudaGetDeviceCount(&devices));
  CUDA(cudaSetDevice(rank % devices));
  NCCL(ncclCommInitRank(&g_comm, n, id, rank));

  const size_t counts[] = {1, 1031, (1u << 20) + 3};
  const size_t maxc = counts[2];
  const int root = 1 % n, next = (rank + 1) % n, prev = (rank + n - 1) % n;
  const float sum = (float)(n * (n + 1) / 2); /* sum of (r + 1) over all ranks */

  float *in, *ar, *ag, *rs, *bc, *rv, *gin, *gout;
  CUDA(cudaMalloc((void**)&in, maxc * sizeof(float)));
  CUDA(cudaMalloc((void**)&ar, maxc * sizeof(float)));
  CUDA(cudaMalloc((void**)&ag, (size_t)n * maxc * sizeof(float)));
  CUDA(cudaMalloc((void**)&rs, maxc * sizeof(float)));
  CUDA(cudaMalloc((void**)&bc, maxc * sizeof(float)));
  CUDA(cudaMalloc((void**)&rv, maxc * sizeof(float)));
  CUDA(cudaMalloc((void**)&gin, maxc * sizeof(float)));
  CUDA(cudaMalloc((void**)&gout, maxc * sizeof(float)));
  float* host = malloc((size_t)n * maxc * sizeof(float));
  float* hin = malloc(maxc * sizeof(float));
  if (!host || !hin) { fprintf(stderr, "rank %d: out of host memory\n", rank); exit(2); }

  cudaStream_t a, b;
  cudaEvent_t ev;
  CUDA(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));

  char step[96];
  for (int s = 0; s < 3; ++s) {
    const size_t c = counts[s];
    for (size_t i = 0; i < c; ++i) hin[i] = (float)(rank + 1) * pattern(i);
    CUDA(cudaMemcpyAsync(in, hin, c * sizeof(float), cudaMemcpyHostToDevice, a));
    CUDA(cudaEventRecord(ev, a)); /* B reads `in` too */
    CUDA(cudaStreamWaitEvent(b, ev, 0));

    NCCL(ncclAllReduce(in, ar, c, ncclFloat, ncclSum, g_comm, a));
    NCCL(ncclAllGather(in, ag, c, ncclFloat, g_comm, b));
    CUDA(cudaEventRecord(ev, b)); /* reduce-scatter on A reads `ag` */
    CUDA(cudaStreamWaitEvent(a, ev, 0));
    NCCL(ncclReduceScatter(ag, rs, c, ncclFloat, ncclSum, g_comm, a));
    CUDA(cudaEventRecord(ev, a)); /* broadcast on B reads the root's `rs` */
    CUDA(cudaStreamWaitEvent(b, ev, 0));
    NCCL(ncclBroadcast(rs, bc, c, ncclFloat, root, g_comm, b));
    NCCL(ncclGroupStart());
    NCCL(ncclSend(rs, c, ncclFloat, next, g_comm, a));
    NCCL(ncclRecv(rv, c, ncclFloat, prev, g_comm, a));
    NCCL(ncclGroupEnd());
    CUDA(cudaStreamSynchronize(a));
    CUDA(cudaStreamSynchronize(b));

    snprintf(step, sizeof step, "allreduce count=%zu", c);
    fetch(host, ar, c), check(step, c, host, 0, sum);
    snprintf(step, sizeof step, "allgather count=%zu", c);
    fetch(host, ag, (size_t)n * c);
    for (int r = 0; r < n; ++r) { /* block r is rank r's input */
      for (size_t i = 0; i < c; ++i) {
        float got = host[(size_t)r * c + i], want = (float)(r + 1) * pattern(i);
        if (got != want) {
          fprintf(stderr, "rank %d: %s MISMATCH at index %zu: got %g, want %g\n", rank, step,
                  (size_t)r * c + i, got, want);
          exit(1);
        }
      }
    }
    printf("rank %d: %s ok\n", rank, step);
    /* Every rank's ag block `rank` is (rank + 1) * pattern: the reduce-scatter sums n of them. */
    snprintf(step, sizeof step, "reducescatter count=%zu", c);
    fetch(host, rs, c), check(step, c, host, 0, (float)(n * (rank + 1)));
    snprintf(step, sizeof step, "broadcast(root %d) count=%zu", root, c);
    fetch(host, bc, c), check(step, c, host, 0, (float)(n * (root + 1)));
    snprintf(step, sizeof step, "sendrecv(from %d) count=%zu", prev, c);
    fetch(host, rv, c), check(step, c, host, 0, (float)(n * (prev + 1)));

    /* The same all-reduce captured once into a graph and replayed on new input. */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    NCCL(ncclAllReduce(gin, gout, c, ncclFloat, ncclSum, g_comm, a));
    CUDA(cudaStreamEndCapture(a, &graph));
    CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int k = 1; k <= 3; ++k) {
      for (size_t i = 0; i < c; ++i) hin[i] = (float)(rank + 1 + k) * pattern(i);
      CUDA(cudaMemcpyAsync(gin, hin, c * sizeof(float), cudaMemcpyHostToDevice, a));
      CUDA(cudaGraphLaunch(exec, a));
      CUDA(cudaMemcpyAsync(host, gout, c * sizeof(float), cudaMemcpyDeviceToHost, a));
      CUDA(cudaStreamSynchronize(a));
      snprintf(step, sizeof step, "graph allreduce launch %d count=%zu", k, c);
      check(step, c, host, 0, sum + (float)(n * k));
    }
    CUDA(cudaGraphExecDestroy(exec));
    CUDA(cudaGraphDestroy(graph));
  }

  NCCL(ncclCommDestroy(g_comm));
  g_comm = NULL;
  CUDA(cudaEventDestroy(ev));
  CUDA(cudaStreamDestroy(a));
  CUDA(cudaStreamDestroy(b));
  float* bufs[] = {in, ar, ag, rs, bc, rv, gin, gout};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i) CUDA(cudaFree(bufs[i]));
  free(host);
  free(hin);
  printf("rank %d: done\n", rank);
  return 0;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4;
  double deadline_s = argc > 2 ? atof(argv[2]) : 240;
  if (n < 1 || n > 8 || deadline_s <= 0) {
    fprintf(stderr, "usage: %s [ranks 1..8] [deadline seconds]\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);

  /* No CUDA call before fork: the id is all the children inherit. */
  ncclUniqueId id;
  NCCL(ncclGetUniqueId(&id));

  pid_t pids[8];
  int status[8], done[8] = {0};
  for (int r = 0; r < n; ++r) {
    fflush(NULL);
    pids[r] = fork();
    if (pids[r] < 0) { perror("fork"); return 2; }
    if (pids[r] == 0) exit(run_rank(r, n, id));
  }

  const double start = now();
  int left = n;
  while (left > 0 && now() - start < deadline_s) {
    for (int r = 0; r < n; ++r) {
      if (!done[r] && waitpid(pids[r], &status[r], WNOHANG) == pids[r]) done[r] = 1, --left;
    }
    if (left > 0) nanosleep(&(struct timespec){0, 100000000}, NULL);
  }

  int worst = 0; /* the worst child's exit status */
  if (left > 0) {
    fprintf(stderr, "deadline of %.0f s passed; ranks not finished:", deadline_s);
    for (int r = 0; r < n; ++r) if (!done[r]) fprintf(stderr, " %d (pid %d)", r, (int)pids[r]);
    fprintf(stderr, "\n");
    for (int r = 0; r < n; ++r) if (!done[r]) kill(pids[r], SIGKILL), waitpid(pids[r], NULL, 0);
  }
  for (int r = 0; r < n; ++r) {
    if (!done[r]) continue;
    if (WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0) continue;
    int code = WIFEXITED(status[r]) ? WEXITSTATUS(status[r]) : 1;
    if (code > worst) worst = code;
    if (WIFEXITED(status[r])) fprintf(stderr, "rank %d exited with status %d\n", r, WEXITSTATUS(status[r]));
    else fprintf(stderr, "rank %d killed by signal %d\n", r, WTERMSIG(status[r]));
  }
  if (left > 0) return 3;
  if (worst) return worst;
  printf("all %d ranks passed in %.1f s\n", n, now() - start);
  return 0;
}
