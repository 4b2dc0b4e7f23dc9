// Chunk arithmetic shared by the schedules: how a channel's element range is cut into the
// pieces that one FIFO step carries.
#pragma once

#include <cstddef>

#include "device/common/host_device.h"

namespace accl {

ACCL_HOST_DEVICE inline size_t divUp(size_t a, size_t b) { return (a + b - 1) / b; }
ACCL_HOST_DEVICE inline size_t minSize(size_t a, size_t b) { return a < b ? a : b; }

// FIFO steps of a point-to-point transfer of `count` elements, `chunkElems` (>= 1) per step: a
// 0-element transfer still takes one (empty) step, so the receiver can match it (algos/send_recv.h).
ACCL_HOST_DEVICE inline size_t p2pStepCount(size_t count, size_t chunkElems) {
  return count == 0 ? 1 : divUp(count, chunkElems);
}

// Elements of block `block` (of `blocks` blocks of `blockElems`) that exist when only `total`
// elements remain from the block origin; 0 for blocks past the end. Every rank computes the
// same numbers, so a block of 0 elements still occupies a FIFO step on every rank.
ACCL_HOST_DEVICE inline size_t blockElems(size_t total, size_t blockElemsMax, int block) {
  size_t start = blockElemsMax * static_cast<size_t>(block);
  return start >= total ? 0 : minSize(blockElemsMax, total - start);
}

}  // namespace accl
