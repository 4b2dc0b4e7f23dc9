// Prims conformance: what every Prims (host today, CUDA later) must do with the step kinds of
// docs/prims.md. Two ends, A and B, are joined by two FIFOs (A -> B and B -> A); each end's
// Prims has B (resp. A) as its one receive peer and its one send peer. A scenario is a short
// per-step program for each end; together the scenarios use every step kind. Each runs
// `steps` steps whose sizes cycle through a full chunk, 0, 1, 7, a chunk minus one and 3
// elements, so zero-element steps, odd sizes and more steps than kFifoSteps are all exercised.
//
// The scripts are ACCL_HOST_DEVICE templates over the Prims type (a CUDA test runs them inside
// a kernel); the expected values are closed-form functions of the element index, the op's
// preOp/postOp and the scenario, computed on the host (OpModel). The GoogleTest suite that runs
// them through a backend's harness is prims_conformance_suite.h.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "device/common/host_device.h"
#include "nccl.h"

namespace accl::conformance {

enum Scenario : int {
  kSendRecv,                // A: send                      B: recv
  kCopySendRecvReduceCopy,  // A: copySend(post)            B: recvReduceCopy(post)
  kRecvReduceSend,          // A: send, recv                B: recvReduceSend
  kRecvReduceCopySend,      // both: send, recvReduceCopySend(post), recv
  kRecvCopySend,            // A: copySend, recv            B: recvCopySend
  kScenarioCount
};

inline const char* scenarioName(int s) {
  static const char* const kNames[] = {"send/recv", "copySend/recvReduceCopy", "send+recv/recvReduceSend",
                                       "send+recvReduceCopySend+recv", "copySend+recv/recvCopySend"};
  return s >= 0 && s < kScenarioCount ? kNames[s] : "?";
}

// Elements of step k, for a chunk capacity `cap` (>= 1).
ACCL_HOST_DEVICE inline size_t stepElems(int k, size_t cap) {
  const size_t pattern[6] = {cap, 0, 1, 7, cap - 1, 3};
  const size_t n = pattern[k % 6];
  return n < cap ? n : cap;
}
// Offset of step k: the steps before it, back to back.
ACCL_HOST_DEVICE inline size_t stepOffset(int k, size_t cap) {
  size_t off = 0;
  for (int j = 0; j < k; ++j) off += stepElems(j, cap);
  return off;
}
ACCL_HOST_DEVICE inline size_t totalElems(int steps, size_t cap) { return stepOffset(steps, cap); }

// Runs end `role` (0 = A, 1 = B) of `scenario` through `p`. The output buffer has room for
// 2 * totalElems(steps, cap) elements (the second half receives what comes back to A).
template <class Prims>
ACCL_HOST_DEVICE void runScript(Prims& p, int scenario, int role, int steps, size_t cap) {
  const size_t total = totalElems(steps, cap);
  for (int k = 0; k < steps; ++k) {
    const size_t o = stepOffset(k, cap);
    const size_t n = stepElems(k, cap);
    switch (scenario) {
      case kSendRecv:
        if (role == 0) p.send(o, n);
        else p.recv(o, n);
        break;
      case kCopySendRecvReduceCopy:
        if (role == 0) p.copySend(o, o, n, /*postOp=*/true);
        else p.recvReduceCopy(o, o, n, /*postOp=*/true);
        break;
      case kRecvReduceSend:
        if (role == 0) {
          p.send(o, n);
          p.recv(o, n);
        } else {
          p.recvReduceSend(o, n);
        }
        break;
      case kRecvReduceCopySend:
        p.send(o, n);
        p.recvReduceCopySend(o, o, n, /*postOp=*/true);
        p.recv(total + o, n);
        break;
      case kRecvCopySend:
        if (role == 0) {
          p.copySend(o, o, n, /*postOp=*/false);
          p.recv(total + o, n);
        } else {
          p.recvCopySend(o, n);
        }
        break;
      default:
        break;
    }
  }
}

// Inputs: small positive integers, exact in every type used (their sums fit an int8).
inline double inputOf(int role, size_t i) {
  return role == 0 ? static_cast<double>(i % 29 + 1) : static_cast<double>((i % 31) * 2 + 3);
}

// The op as the expectation sees it: preOp on each contribution when read, postOp on the final
// value. ncclAvg of 2 ranks: floats multiply each contribution by 0.5; integers divide the sum by 2.
struct OpModel {
  bool avg = false;
  bool integer = false;
  double pre(double x) const { return avg && !integer ? x * 0.5 : x; }
  double post(double x) const { return avg && integer ? std::trunc(x / 2) : x; }
};

// The expected value of element i of `role`'s output (2 * total elements), or false when the
// scenario leaves that element untouched.
inline bool expectedOutput(int scenario, int role, size_t i, size_t total, const OpModel& op, double* value) {
  const bool second = i >= total;
  const size_t e = second ? i - total : i;
  const double a = op.pre(inputOf(0, e));
  const double b = op.pre(inputOf(1, e));
  switch (scenario) {
    case kSendRecv:
      if (role == 1 && !second) return *value = a, true;
      return false;
    case kCopySendRecvReduceCopy:
      if (second) return false;
      *value = role == 0 ? op.post(a) : op.post(op.post(a) + b);
      return true;
    case kRecvReduceSend:
      if (role == 0 && !second) return *value = a + b, true;
      return false;
    case kRecvReduceCopySend:
      return *value = op.post(a + b), true;
    case kRecvCopySend:
      if (role == 1 && second) return false;
      return *value = a, true;
    default:
      return false;
  }
}

// Element access for the types the conformance test uses.
inline size_t elemBytes(ncclDataType_t t) { return t == ncclFloat32 || t == ncclInt32 ? 4 : 1; }
inline double loadElem(const void* buf, ncclDataType_t t, size_t i) {
  const char* p = static_cast<const char*>(buf) + i * elemBytes(t);
  if (t == ncclFloat32) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  if (t == ncclInt32) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  return static_cast<uint8_t>(*p);
}
inline void storeElem(void* buf, ncclDataType_t t, size_t i, double v) {
  char* p = static_cast<char*>(buf) + i * elemBytes(t);
  if (t == ncclFloat32) {
    float f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
  } else if (t == ncclInt32) {
    int32_t x = static_cast<int32_t>(v);
    std::memcpy(p, &x, 4);
  } else {
    *p = static_cast<char>(static_cast<uint8_t>(v));
  }
}

}  // namespace accl::conformance
