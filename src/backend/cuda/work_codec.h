// The one codec between a collective's CollWork (device/common/work.h) and its 64-byte
// DevWorkItem (kernel_args.h): the host encodes when it packs a plan (work_batch.cc), the kernel
// decodes each item it runs (kernels/dev_run.h), and work_batch's unpack decodes for tests and
// diagnostics. Copy collectives travel in bytes under their canonical uint8 id (dev_func.h):
// encoding multiplies counts by `scale` (the element size, or 1), decoding with the same scale
// restores them, and a decode with scale 1 gives the kernel's view (counts in the id's type).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cuda/dev_func.h"
#include "backend/cuda/kernel_args.h"
#include "device/common/host_device.h"
#include "device/common/work.h"

namespace accl {

// The item of `w` under function id `id`, with counts multiplied by `scale`.
ACCL_HOST_DEVICE inline DevWorkItem encodeCollItem(const CollWork& w, int id, size_t scale) {
  DevWorkItem it{};
  it.funcId = static_cast<uint16_t>(id);
  it.kind = static_cast<uint8_t>(unsigned(kDevItemColl) | (unsigned(w.type) << 4));
  it.flags = w.op.scalarIsPtr ? kDevItemScalarIsPtr : 0;
  it.rootOrPeer = w.root;
  it.opArg = w.op.arg;
  it.sendbuff = w.sendbuff;
  it.recvbuff = w.recvbuff;
  it.count = w.count * scale;
  it.chanOffset = w.chanOffset * scale;
  it.chanCount = w.chanCount * scale;
  it.chunkElems = w.chunkElems * scale;
  return it;
}

// The work of item `it`: function, algorithm, protocol and op from its id, counts divided by
// `scale`. The type is the id's (what the kernel computes in); a caller restoring the user's
// view sets it from it.userType().
ACCL_HOST_DEVICE inline CollWork decodeCollItem(const DevWorkItem& it, size_t scale = 1) {
  const DevFuncKey k = devFuncKey(it.funcId);
  CollWork w{};
  w.func = static_cast<FuncId>(k.coll);
  w.algo = static_cast<AlgoId>(k.algo);
  w.proto = static_cast<ProtoId>(k.proto);
  w.type = static_cast<ncclDataType_t>(k.type);
  w.op.kind = devCollIsCopy(k.coll) ? DevRedOpKind::kSum : static_cast<DevRedOpKind>(k.op);
  w.op.scalarIsPtr = (it.flags & kDevItemScalarIsPtr) != 0;
  w.op.arg = it.opArg;
  w.sendbuff = it.sendbuff;
  w.recvbuff = it.recvbuff;
  w.count = it.count / scale;
  w.root = it.rootOrPeer;
  w.chanOffset = it.chanOffset / scale;
  w.chanCount = it.chanCount / scale;
  w.chunkElems = it.chunkElems / scale;
  return w;
}

}  // namespace accl
