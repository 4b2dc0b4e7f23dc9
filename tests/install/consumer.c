/* A program built against an installed accl, as against NVIDIA's packages: tests/install/
 * install_test.sh compiles it with `pkg-config --cflags --libs nccl` (and nccl_static) and through
 * CMake's find_package(NCCL) / find_package(accl) (consumer/CMakeLists.txt). It checks that the
 * header and the library agree on the version, then all-reduces 5 floats over 2 ranks of one
 * process (ncclCommInitAll; host backend). Exits 0 and prints "consumer ok" only if all passed. */
#include <nccl.h>
#include <stdio.h>

#define NRANKS 2
#define COUNT 5

#define CHECK(call)                                                                          \
  do {                                                                                       \
    ncclResult_t r_ = (call);                                                                \
    if (r_ != ncclSuccess) {                                                                 \
      fprintf(stderr, "consumer: %s failed: %s (%s)\n", #call, ncclGetErrorString(r_),       \
              ncclGetLastError(NULL));                                                       \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

int main(void) {
  int version = 0;
  CHECK(ncclGetVersion(&version));
  if (version != NCCL_VERSION_CODE) {
    fprintf(stderr, "consumer: library version %d, header %d\n", version, NCCL_VERSION_CODE);
    return 1;
  }
  ncclComm_t comms[NRANKS];
  CHECK(ncclCommInitAll(comms, NRANKS, NULL));
  float in[NRANKS][COUNT], out[NRANKS][COUNT];
  for (int r = 0; r < NRANKS; ++r)
    for (int i = 0; i < COUNT; ++i) in[r][i] = (float)(10 * r + i);
  CHECK(ncclGroupStart());
  for (int r = 0; r < NRANKS; ++r) CHECK(ncclAllReduce(in[r], out[r], COUNT, ncclFloat32, ncclSum, comms[r], NULL));
  CHECK(ncclGroupEnd());
  int wrong = 0;
  for (int r = 0; r < NRANKS; ++r)
    for (int i = 0; i < COUNT; ++i)
      if (out[r][i] != (float)(10 + 2 * i)) ++wrong; /* rank 0: i, rank 1: 10 + i */
  for (int r = 0; r < NRANKS; ++r) CHECK(ncclCommDestroy(comms[r]));
  if (wrong) {
    fprintf(stderr, "consumer: %d wrong all-reduce results\n", wrong);
    return 1;
  }
  printf("consumer ok: NCCL %d, all-reduce over %d ranks\n", version, NRANKS);
  return 0;
}
