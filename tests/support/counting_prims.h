// A Prims that moves no data but counts what a schedule asks for: steps by kind and elements
// through each side. It compiles for host and device (ACCL_HOST_DEVICE), so the same schedule
// instantiation is checked on both: on the host against closed-form step counts, and under nvcc
// to prove src/algos is CUDA-clean (tests/gpu).
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/common/host_device.h"

namespace accl {

struct PrimsCounts {
  uint64_t sends = 0;        // steps that push data to the next peer(s)
  uint64_t recvs = 0;        // steps that take data from the previous peer(s)
  uint64_t reduces = 0;      // steps that combine received data with the local input
  uint64_t outputs = 0;      // steps that write the output buffer
  uint64_t postOps = 0;      // steps that apply the op's postOp
  uint64_t elemsSent = 0;
  uint64_t elemsOut = 0;
};

struct CountingPrims {
  PrimsCounts c;
  ACCL_HOST_DEVICE void send(size_t, size_t n) { c.sends++; c.elemsSent += n; }
  ACCL_HOST_DEVICE void recv(size_t, size_t n) { c.recvs++; c.outputs++; c.elemsOut += n; }
  ACCL_HOST_DEVICE void recvReduceSend(size_t, size_t n) { c.recvs++; c.reduces++; c.sends++; c.elemsSent += n; }
  ACCL_HOST_DEVICE void recvReduceCopySend(size_t, size_t, size_t n, bool post) {
    c.recvs++; c.reduces++; c.sends++; c.outputs++; c.postOps += post; c.elemsSent += n; c.elemsOut += n;
  }
  ACCL_HOST_DEVICE void recvCopySend(size_t, size_t n) {
    c.recvs++; c.sends++; c.outputs++; c.elemsSent += n; c.elemsOut += n;
  }
  ACCL_HOST_DEVICE void copySend(size_t, size_t, size_t n, bool post) {
    c.sends++; c.outputs++; c.postOps += post; c.elemsSent += n; c.elemsOut += n;
  }
  ACCL_HOST_DEVICE void recvReduceCopy(size_t, size_t, size_t n, bool post) {
    c.recvs++; c.reduces++; c.outputs++; c.postOps += post; c.elemsOut += n;
  }
  ACCL_HOST_DEVICE void localCopy(size_t, size_t, size_t n, bool post) { c.outputs++; c.postOps += post; c.elemsOut += n; }
};

}  // namespace accl
