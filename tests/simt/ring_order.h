// The value ring all-reduce produces when every rank reduces in the host backend's order, for
// bit-for-bit checks of the CUDA Prims (CPU harness and GPU): block b of each grid step starts as
// preOp(x[b+1]) on rank b+1, each next rank r computes op(partial, preOp(x[r])), rank b last;
// then postOp. Also a deterministic random element generator for such checks. Host code only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "device/common/chunk_loop.h"
#include "device/common/dtypes.h"

namespace accl::primstest {

template <class T>
T randomElem(uint64_t& state) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  const uint64_t bits = state >> 11;
  if constexpr (std::is_same_v<T, float>)
    return float(int64_t(bits % 2001) - 1000) / 37.0f;
  else if constexpr (std::is_same_v<T, double>)
    return double(int64_t(bits % 20001) - 10000) / 37.0;
  else if constexpr (kIsNarrowFloat<T>)
    return T::fromFloat(float(int64_t(bits % 2001) - 1000) / 97.0f);
  else
    return T(bits);
}

// x[r] is rank r's input (ring position r); chunkElems as the Prims use it.
template <class T, class Op>
std::vector<T> ringOrderResult(const std::vector<std::vector<T>>& x, size_t count, size_t chunkElems, const Op& op) {
  const int n = int(x.size());
  std::vector<T> result(count);
  if (n == 1) {
    for (size_t i = 0; i < count; ++i) result[i] = op.postOp(op.preOp(x[0][i]));
    return result;
  }
  const size_t loop = size_t(n) * chunkElems;
  for (size_t grid = 0; grid < count; grid += loop) {
    const size_t remaining = count - grid;
    const size_t chunk = minSize(chunkElems, divUp(remaining, n));
    for (int b = 0; b < n; ++b) {
      const size_t start = grid + chunk * size_t(b);
      const size_t elems = blockElems(remaining, chunk, b);
      for (size_t i = start; i < start + elems; ++i) {
        T acc = op.preOp(x[(b + 1) % n][i]);
        for (int k = 2; k <= n; ++k) acc = op(acc, op.preOp(x[(b + k) % n][i]));
        result[i] = op.postOp(acc);
      }
    }
  }
  return result;
}

}  // namespace accl::primstest
