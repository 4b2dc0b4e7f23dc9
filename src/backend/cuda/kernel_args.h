// The CUDA kernel's argument layout: what one launch (one communicator, one group) hands its
// kernel by value, and the device-side tables the items refer to. Host- and device-compilable,
// fixed layout (static_asserts below), unit-tested in the host build (tests/unit/cuda_launch_*).
//
//   KernelArgs (exactly kKernelArgBytes = 4 KiB, passed by value)
//     header   64 bytes + per-channel item ranges (kArgMaxChannels x {first, count})
//     items    kArgInlineItems DevWorkItems of 64 bytes, channel after channel
//   When a launch has more items than fit inline, *all* its items go to a spill buffer
//   (pinned, device-mapped host memory owned by the launch) and header.spill points at it; the
//   ranges then index that buffer. One layout either way: items of channel c are
//   items[first[c] .. first[c] + count[c]).
//
// Why 4 KiB: every architecture and every CUDA 12/13 toolkit accepts 4 KiB of kernel parameters
// (CUDA 12.1+ accepts 32 764 bytes on Volta and newer, but each launch — and each graph kernel
// node — copies the whole parameter block, so a large fixed block costs every small collective).
// 4 KiB holds 61 items (summed over the launch's channels) before the launch spills.
//
// One block per channel: blockIdx.x = c runs items of channel c in order. Item kinds: a
// collective (its schedule over the channel's ring or tree), or a point-to-point transfer;
// consecutive transfers with the same `batch` number are progressed together, one chunk step of
// each in turn, so any send/recv pattern of a group completes (as the host p2p loop does).
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/common/topology_view.h"
#include "device/common/host_device.h"

namespace accl {

struct PrimsConn;  // device/cuda/prims_conn.h

constexpr size_t kKernelArgBytes = 4096;
constexpr int kArgMaxChannels = 32;

enum DevItemKind : uint8_t {
  kDevItemColl = 0,
  kDevItemSend = 1,
  kDevItemRecv = 2,
};

enum DevItemFlags : uint8_t {
  kDevItemScalarIsPtr = 1,  // PreMulSum scalar: opArg is a pointer to it
  kDevItemBatchEnd = 2,     // p2p: last transfer of its batch
};

// One work item, 64 bytes, 16-byte aligned. Counts are in elements of the id's type (copy
// collectives: bytes, see dev_func.h).
struct alignas(16) DevWorkItem {
  ACCL_HOST_DEVICE int itemKind() const { return kind & 0xf; }
  ACCL_HOST_DEVICE int userType() const { return kind >> 4; }

  uint16_t funcId;      // DevFuncId
  uint8_t kind;         // low nibble: DevItemKind; high nibble: the user's ncclDataType_t
  uint8_t flags;        // DevItemFlags
  int32_t rootOrPeer;   // collective: root rank (Broadcast/Reduce); p2p: peer rank
  uint64_t opArg;       // DevRedOp::arg (PreMulSum scalar bytes or address, SumPostDiv divisor)
  const void* sendbuff;
  void* recvbuff;
  uint64_t count;       // the user's count (collectives)
  uint64_t chanOffset;  // this channel's share: [chanOffset, chanOffset + chanCount)
  uint64_t chanCount;
  uint64_t chunkElems;  // elements one FIFO step carries (>= 1)
};
static_assert(sizeof(DevWorkItem) == 64, "DevWorkItem layout is fixed at 64 bytes");
static_assert(offsetof(DevWorkItem, opArg) == 8 && offsetof(DevWorkItem, sendbuff) == 16 &&
                  offsetof(DevWorkItem, chunkElems) == 56,
              "DevWorkItem field offsets are part of the kernel ABI");

struct DevChannelRange {
  uint16_t first;
  uint16_t count;
};

struct alignas(16) KernelArgsHeader {
  uint32_t magic;       // kKernelArgsMagic: the kernel checks it
  uint16_t nChannels;   // blocks of the launch
  uint16_t nItems;      // items in all channels
  const DevWorkItem* spill;  // device-visible address of the items, or null: they are inline
  void* comm;                // DevComm* (device-visible)
  uint64_t launchId;         // the communicator's launch counter (diagnostics)
  // Device-visible [2 * nItems] or null: item i's start and end (simt::globalTimerNs), written by
  // its channel's block for a profiler plugin's KernelCh events (items of a p2p batch: the
  // batch's). An item that did not end (an error, an abort) keeps end 0.
  uint64_t* itemTimes;
  uint8_t reserved[24];
  DevChannelRange channels[kArgMaxChannels];
};
constexpr uint32_t kKernelArgsMagic = 0xacc10a46u;
static_assert(sizeof(KernelArgsHeader) == 64 + 4 * kArgMaxChannels, "KernelArgsHeader layout");

constexpr int kArgInlineItems = int((kKernelArgBytes - sizeof(KernelArgsHeader)) / sizeof(DevWorkItem));

struct alignas(16) KernelArgs {
  KernelArgsHeader header;
  DevWorkItem items[kArgInlineItems];

  ACCL_HOST_DEVICE const DevWorkItem* itemBase() const { return header.spill ? header.spill : items; }
};
static_assert(sizeof(KernelArgs) == kKernelArgBytes, "KernelArgs is exactly the parameter budget");
static_assert(offsetof(KernelArgs, items) == sizeof(KernelArgsHeader) && offsetof(KernelArgs, items) % 16 == 0,
              "items follow the header, 16-byte aligned");
static_assert(kArgInlineItems == 61, "inline item capacity (update docs when the layout changes)");

// What a block needs about its channel's peers, in device-visible memory (built by the backend's
// connect from the connection table; the PrimsConns are the GPU transports' device ends).
struct DevChannel {
  int nRanks;
  int ringIndex;
  const int* ringUserRanks;  // [nRanks], device-visible
  TreeView tree;
  PrimsConn* ringRecv;       // from the ring predecessor
  PrimsConn* ringSend;       // to the ring successor
  PrimsConn* treeUpSend;     // to the tree parent (reduce phase)
  PrimsConn* treeUpRecv;     // from the tree parent (broadcast phase)
  PrimsConn* treeDownRecv[kMaxTreeChildren];  // from each child (reduce phase)
  PrimsConn* treeDownSend[kMaxTreeChildren];  // to each child (broadcast phase)
  PrimsConn** p2pSend;       // [nRanks]: to peer r, null where not connected
  PrimsConn** p2pRecv;       // [nRanks]: from peer r
};

// Error codes the kernel stores in DevComm::errorWord (first error wins; 0 = none).
enum DevError : uint32_t {
  kDevErrNone = 0,
  kDevErrAborted = 1,       // a spin loop saw the abort flag
  kDevErrBadArgs = 2,       // header magic or ranges inconsistent
  kDevErrNoKernel = 3,      // an item's function id is not built into this library
  kDevErrNoConnection = 4,  // an item needs a peer the channel has no connection for
};

// The communicator as its kernels see it (device-visible; the flag and error word are in
// pinned host memory mapped into the device, so the host reads and writes them directly).
struct DevComm {
  DevChannel* channels;        // [kArgMaxChannels]
  const uint32_t* abortFlag;   // non-zero: every spin loop gives up
  uint32_t* errorWord;         // first DevError a block met
  uint32_t* errorDetail;       // item index / function id of that error
  int rank;
  int nRanks;
};

}  // namespace accl
