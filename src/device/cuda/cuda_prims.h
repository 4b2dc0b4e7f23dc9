// The CUDA backend's Prims: the step contract of docs/prims.md carried out by a group of warps
// (by default the whole thread block of a channel), written against the device-primitives layer
// (device/simt/simt.h) so that the same code runs under nvcc and, in CI, on the CPU SIMT harness.
//
// Every thread of the group runs the schedule (src/algos) with the same arguments, so all of
// them take the same steps. Roles inside the group (fixed when the Prims is built):
//
//   peer warp   the group's last warp, when the Prims has peers. Peer p (receive peers first,
//               then send peers) belongs to its lane p: that lane waits for its peer
//               (Simple receive: `tail` > step; every send: a free slot, `head` + kFifoSteps >
//               step) and later posts for it (send: a system-scope release store of `tail`;
//               receive: a release store of `head`).
//   data warps  the other warps move and reduce the chunk: Simple with 16-byte vector loads and
//               stores, kUnroll (4; tree: 2) packets per thread in flight; LL one 16-byte line
//               (8 data bytes) per thread, spinning on the line's flags; LL128 warps cooperating
//               on 4 lines of 128 bytes, several such groups in flight per warp. Up to three
//               receive sources (tree) are reduced in the host backend's order:
//               reduce(recv0, preOp(input)), then each further source, postOp last.
//
// One step:  peer lanes wait  ->  barrier A "data available" (named, every thread, OR vote:
// "a wait was aborted" stops the group uniformly)  ->  data warps move the chunk  ->  barrier B
// "data ready" (named: Simple data warps only arrive, bar.arrive, and go on to the next step's
// barrier A while the peer warps sync and post; LL/LL128 data can see an abort, so there B is an
// OR vote of the whole group)  ->  peer lanes post.
// A group of one warp has no dedicated peer warp: its lanes wait, move data and post, and both
// barriers are votes of that warp.
//
// Warp groups: CudaPrimsArgs::firstWarp / nWarps / barrierBase give a Prims a subset of the
// block's warps and its own two named barriers, so independent Prims run side by side in one
// block (point-to-point: device/cuda/p2p_batch.h puts sends and receives on separate groups).
// Only the threads of the group may call its methods.
//
// Peer counts are template parameters (kMaxRecv / kMaxSend, default the tree's fan of three), so
// per-peer state stays in registers and the peer loops unroll; a ring uses CudaPrims<T, Op, 1, 1>.
//
// An abort (the communicator's flag, polled by every spin loop) is sticky: the step that saw it
// and every later step do nothing; aborted() tells the kernel.
//
// Requirements: 1-D block of whole warps; chunk sizes within primsChunkCapacity() of every
// connection; Simple slots 16-byte aligned; barrierBase and barrierBase + 1 in 1..15 (0 is
// __syncthreads) and used by no other group running at the same time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "device/common/topology_view.h"
#include "device/common/ids.h"
#include "device/cuda/prims_conn.h"
#include "device/simt/simt.h"

// Unrolls a loop with a compile-time trip count under nvcc (the host compiler decides alone).
#if defined(__CUDACC__)
#define ACCL_PRIMS_UNROLL _Pragma("unroll")
#else
#define ACCL_PRIMS_UNROLL
#endif

namespace accl {

// Steps of a connection between two LL clean-up passes (CudaPrims::cleanLL): far below the 2^32
// steps after which a 32-bit LL flag comes round.
constexpr uint64_t kLLCleanSteps = uint64_t(1) << 28;

struct CudaPrimsArgs {
  PrimsConn* recv[kMaxTreeChildren] = {};
  int nRecv = 0;
  PrimsConn* send[kMaxTreeChildren] = {};
  int nSend = 0;
  const void* input = nullptr;
  void* output = nullptr;
  bool inputIsContribution = true;  // the op's preOp applies when the input is read
  ProtoId proto = kProtoSimple;
  const uint32_t* abortFlag = nullptr;  // the communicator's abort flag (device-visible), or null
  // The warp group: warps [firstWarp, firstWarp + nWarps) of the block (nWarps 0: every warp
  // from firstWarp on) and its named barriers barrierBase, barrierBase + 1.
  int firstWarp = 0;
  int nWarps = 0;
  int barrierBase = 1;
};

// kProto: the protocol fixed at compile time (a ProtoId), or kAnyProto to take CudaPrimsArgs::proto
// at run time. A fixed protocol compiles only its own data path.
constexpr int kAnyProto = -1;

template <class T, class Op, int kMaxRecv = kMaxTreeChildren, int kMaxSend = kMaxTreeChildren,
          int kProto = kAnyProto>
class CudaPrims {
  static_assert(kMaxRecv >= 0 && kMaxRecv <= kMaxTreeChildren && kMaxSend >= 0 && kMaxSend <= kMaxTreeChildren,
                "peer counts are 0..kMaxTreeChildren");

 public:
  ACCL_SIMT_FN CudaPrims(const CudaPrimsArgs& args, const Op& op)
      : input_(args.input),
        output_(args.output),
        abortFlag_(args.abortFlag),
        op_(op),
        proto_(args.proto),
        contribution_(args.inputIsContribution) {
    nRecv_ = args.nRecv < kMaxRecv ? args.nRecv : kMaxRecv;
    nSend_ = args.nSend < kMaxSend ? args.nSend : kMaxSend;
    const int blockWarps = simt::warpCount();
    nWarps_ = args.nWarps > 0 ? args.nWarps : blockWarps - args.firstWarp;
    nThreads_ = nWarps_ * simt::kWarpSize;
    tid_ = simt::threadIndex() - args.firstWarp * simt::kWarpSize;
    barA_ = args.barrierBase;
    barB_ = args.barrierBase + 1;
    // The previous Prims' step write-backs (peer lanes) are visible to the whole group.
    simt::barSync(barA_, nThreads_);
    // Each peer's slots and step, read once here: a load of the connection per step would put
    // a dependent round trip before every slot address (issue 18 fault 8).
    ACCL_PRIMS_UNROLL
    for (int i = 0; i < kMaxRecv; ++i) {
      const PrimsConn* c = i < nRecv_ ? args.recv[i] : nullptr;
      recvStep_[i] = c ? c->step : 0;
      recvSlots_[i] = c ? c->slotsOf(proto()) : nullptr;
      recvStride_[i] = c ? c->slotStrideOf(proto()) : 0;
    }
    ACCL_PRIMS_UNROLL
    for (int i = 0; i < kMaxSend; ++i) {
      const PrimsConn* c = i < nSend_ ? args.send[i] : nullptr;
      sendStep_[i] = c ? c->step : 0;
      sendSlots_[i] = c ? c->slotsOf(proto()) : nullptr;
      sendStride_[i] = c ? c->slotStrideOf(proto()) : 0;
    }
    const int peers = nRecv_ + nSend_;
    const int warp = tid_ / simt::kWarpSize, lane = tid_ % simt::kWarpSize;
    dedicated_ = nWarps_ >= 2;
    if (dedicated_) {
      // One warp holds every peer lane (at most 2 x kMaxTreeChildren peers, a lane each; their
      // spins are independent under independent thread scheduling): the other warps move data
      // (issue 18 fault 8: a warp per peer left 2 of 16 warps idle on a ring, 4 of 16 on a tree).
      const int peerWarps = peers > 0 ? 1 : 0;
      dataWarps_ = nWarps_ - peerWarps;
      const int fromLast = nWarps_ - 1 - warp;  // peer warp index, counted from the group's end
      peerThread_ = fromLast < peerWarps;
      myPeer_ = peerThread_ ? lane * peerWarps + fromLast : -1;
    } else {
      dataWarps_ = 1;
      peerThread_ = true;
      myPeer_ = lane;
    }
    if (myPeer_ >= peers) myPeer_ = -1;
    dataTid_ = warp < dataWarps_ ? tid_ : -1;
    // The peer lane's own connection: the counter it waits on (receive: tail; send: head), the one
    // it posts (receive: head; send: tail), the send side's step info, and where its step is
    // written back.
    ACCL_PRIMS_UNROLL
    for (int i = 0; i < kMaxRecv; ++i)
      if (i == myPeer_) myConn_ = args.recv[i];
    ACCL_PRIMS_UNROLL
    for (int i = 0; i < kMaxSend; ++i)
      if (i == myPeer_ - nRecv_) myConn_ = args.send[i];
    if (myConn_) {
      const bool isRecv = myPeer_ < nRecv_;
      myWait_ = isRecv ? myConn_->tail : myConn_->head;
      myPost_ = isRecv ? myConn_->head : myConn_->tail;
      myStepInfo_ = isRecv ? nullptr : myConn_->stepInfo;
    }
  }

  ACCL_SIMT_FN void send(size_t in, size_t n) { step(kIn | kSend, in, 0, n); }
  ACCL_SIMT_FN void recv(size_t out, size_t n) { step(kRecv | kOut, 0, out, n); }
  ACCL_SIMT_FN void recvReduceSend(size_t in, size_t n) { step(kRecv | kIn | kSend, in, 0, n); }
  ACCL_SIMT_FN void recvReduceCopySend(size_t in, size_t out, size_t n, bool postOp) {
    step(kRecv | kIn | kOut | kSend | (postOp ? kPost : 0u), in, out, n);
  }
  ACCL_SIMT_FN void recvCopySend(size_t out, size_t n) { step(kRecv | kOut | kSend, 0, out, n); }
  ACCL_SIMT_FN void copySend(size_t in, size_t out, size_t n, bool postOp) {
    step(kIn | kOut | kSend | (postOp ? kPost : 0u), in, out, n);
  }
  ACCL_SIMT_FN void recvReduceCopy(size_t in, size_t out, size_t n, bool postOp) {
    step(kRecv | kIn | kOut | (postOp ? kPost : 0u), in, out, n);
  }
  ACCL_SIMT_FN void localCopy(size_t in, size_t out, size_t n, bool postOp) {
    step(kIn | kOut | (postOp ? kPost : 0u), in, out, n);
  }

  ACCL_SIMT_FN ProtoId proto() const { return kProto == kAnyProto ? proto_ : static_cast<ProtoId>(kProto); }

  // True (in every thread of the group alike) once a wait was aborted; later steps did nothing.
  ACCL_SIMT_FN bool aborted() const { return aborted_; }

 private:
  enum : unsigned { kRecv = 1, kIn = 2, kOut = 4, kSend = 8, kPost = 16 };
  // Simple packets per data thread in flight: 4 with one receive source; 2 with up to three (a
  // tree's), which keeps the 2 x 3 received packets in registers at 512 threads per block.
  static constexpr int kUnroll = kMaxRecv <= 1 ? 4 : 2;

  // Up to 16 bytes of a chunk as one value: a packet.
  using Pack = simt::Vec16;

  ACCL_SIMT_FN void step(unsigned what, size_t in, size_t out, size_t n) {
    if (aborted_) return;
    if ((what & (kRecv | kSend)) == 0) {  // localCopy: no peer, no barrier (each packet stays with its thread)
      if (dataTid_ >= 0) moveSimple(what, in, out, n);
      return;
    }
    // 1. wait, then barrier A: data available, every slot to write is free.
    bool ok = true;
    if (myPeer_ >= 0) ok = waitPeer(what);
    convergeWarp();  // bar.sync is warp-aligned: the waiting lane rejoins its warp first
    if (simt::barSyncOr(barA_, nThreads_, !ok)) {
      aborted_ = true;
      return;
    }
    // 2. data, then barrier B: data ready.
    if (proto() == kProtoSimple) {
      if (dataTid_ >= 0) moveSimple(what, in, out, n);
      convergeWarp();
      if (dedicated_ && !peerThread_) simt::barArrive(barB_, nThreads_);
      else simt::barSync(barB_, nThreads_);
    } else {
      if (dataTid_ >= 0) ok = proto() == kProtoLL ? moveLL(what, in, out, n) : moveLL128(what, in, out, n);
      convergeWarp();
      if (simt::barSyncOr(barB_, nThreads_, !ok)) {
        aborted_ = true;
        return;
      }
    }
    // 3. post (every thread advances its copy of the step counters).
    if (myPeer_ >= 0) postPeer(what, n);
    if (what & kSend) {
      ACCL_PRIMS_UNROLL
      for (int i = 0; i < kMaxSend; ++i) sendStep_[i] += 1;
    }
    if (what & kRecv) {
      ACCL_PRIMS_UNROLL
      for (int i = 0; i < kMaxRecv; ++i) recvStep_[i] += 1;
    }
  }

  // Under nvcc, reconverges the warp before a (warp-aligned) named barrier after lanes diverged
  // in spin loops; the CPU harness has no warp convergence to restore.
  ACCL_SIMT_FN static void convergeWarp() {
#if defined(__CUDACC__)
    __syncwarp();
#endif
  }

  // ---- 1. wait / 3. post (peer lanes) ------------------------------------------------------------

  ACCL_SIMT_FN bool waitPeer(unsigned what) const {
    if (myPeer_ < nRecv_) {
      if (!(what & kRecv) || proto() != kProtoSimple) return true;  // LL/LL128: data lanes poll the flags
      const uint64_t* tail = myWait_;
      const uint64_t need = recvStepOf(myPeer_);
      return simt::spinUntil([&] { return simt::loadAcquire(tail) > need; }, abortFlag_);
    }
    if (!(what & kSend)) return true;
    const int s = myPeer_ - nRecv_;
    const uint64_t* head = myWait_;
    const uint64_t step = sendStepOf(s);
    return simt::spinUntil([&] { return simt::loadAcquire(head) + kFifoSteps > step; }, abortFlag_);
  }

  // What a step of `n` elements puts in a send slot (fifoStepInfo): Simple the payload bytes, LL
  // the 16-byte lines written (8 data bytes each), LL128 the 128-byte lines of the warp groups
  // written, with kFifoStepLL128.
  ACCL_SIMT_FN uint32_t stepInfoOf(size_t n) const {
    const size_t bytes = n * sizeof(T);
    if (proto() == kProtoLL) return fifoStepInfo((bytes + 7) / 8 * 16, true);
    if (proto() == kProtoLL128) {
      const size_t lines = (bytes + kLL128LineDataBytes - 1) / kLL128LineDataBytes;
      const size_t groups = (lines + simt::kLL128LinesPerWarp - 1) / simt::kLL128LinesPerWarp;
      return uint32_t(groups * simt::kLL128LinesPerWarp * simt::kLL128LineBytes) | kFifoStepLL128;
    }
    return fifoStepInfo(bytes, false);
  }

  ACCL_SIMT_FN void postPeer(unsigned what, size_t n) const {
    if (myPeer_ < nRecv_) {
      if (!(what & kRecv)) return;
      const uint64_t next = recvStepOf(myPeer_) + 1;
      simt::storeRelease(myPost_, next);
      myConn_->step = next;
      return;
    }
    if (!(what & kSend)) return;
    const int s = myPeer_ - nRecv_;
    const uint64_t next = sendStepOf(s) + 1;
    if (myStepInfo_) simt::storeVolatile32(myStepInfo_ + (next - 1) % kFifoSteps, stepInfoOf(n));
    // A system-scope release is cumulative: the data warps' slot stores (ordered before it by
    // barrier B) and this lane's stepInfo store are visible to whoever acquires `tail`. No fence
    // before it (issue 18 fault 8: a fence plus a release was two MEMBARs per post; the
    // weak-memory harness shows either one alone suffices).
    simt::storeRelease(myPost_, next);
    myConn_->step = next;
  }

  // Per-peer state by a run-time index, without indexing the register arrays dynamically.
  ACCL_SIMT_FN uint64_t recvStepOf(int i) const {
    uint64_t s = 0;
    ACCL_PRIMS_UNROLL
    for (int k = 0; k < kMaxRecv; ++k)
      if (k == i) s = recvStep_[k];
    return s;
  }
  ACCL_SIMT_FN uint64_t sendStepOf(int i) const {
    uint64_t s = 0;
    ACCL_PRIMS_UNROLL
    for (int k = 0; k < kMaxSend; ++k)
      if (k == i) s = sendStep_[k];
    return s;
  }

  // ---- element work on one packet ---------------------------------------------------------------

  // Computes the packet of `cnt` elements (at most kBytes / sizeof(T)) that starts at element
  // `e` of this step: from the received packets `rp` (nSrc of them) and/or the input, stores it
  // to the output when asked, and returns it packed for the send peers.
  // A full packet takes the path with a compile-time element count (unrolled, in registers).
  template <int kBytes>
  ACCL_SIMT_FN Pack compute(unsigned what, const Pack* rp, int nSrc, size_t in, size_t out, size_t e,
                            int cnt) const {
    constexpr int kElems = kBytes / int(sizeof(T)) > 0 ? kBytes / int(sizeof(T)) : 1;
    if (cnt == kElems) return computeCount<kBytes, kElems>(what, rp, nSrc, in, out, e, kElems);
    return computeCount<kBytes, 0>(what, rp, nSrc, in, out, e, cnt);
  }
  template <int kBytes, int kFixed>
  ACCL_SIMT_FN Pack computeCount(unsigned what, const Pack* rp, int nSrc, size_t in, size_t out, size_t e,
                                 int cntArg) const {
    constexpr int kElems = kBytes / int(sizeof(T)) > 0 ? kBytes / int(sizeof(T)) : 1;
    const int cnt = kFixed > 0 ? kFixed : cntArg;
    // Every loop runs over the compile-time kElems with `j < cnt` as a predicate: an array indexed
    // by a run-time bound lives in local memory on a GPU (issue 18 fault 8: STL/LDL per packet).
    T r[16 / sizeof(T)] = {};
    if (what & kRecv) memcpy(r, &rp[0], sizeof r);
    if (what & kIn) {
      T x[16 / sizeof(T)];
      loadElems<kElems>(x, static_cast<const T*>(input_) + in + e, cnt, proto() == kProtoLL128);
      ACCL_PRIMS_UNROLL
      for (int j = 0; j < kElems; ++j) {
        if (j >= cnt) break;
        const T v = contribution_ ? op_.preOp(x[j]) : x[j];
        r[j] = (what & kRecv) ? op_(r[j], v) : v;
      }
      ACCL_PRIMS_UNROLL
      for (int i = 1; i < kMaxRecv; ++i) {
        if (i >= nSrc) break;
        T o[16 / sizeof(T)];
        memcpy(o, &rp[i], sizeof o);
        ACCL_PRIMS_UNROLL
        for (int j = 0; j < kElems; ++j) {
          if (j >= cnt) break;
          r[j] = op_(r[j], o[j]);
        }
      }
    }
    if (what & kPost) {
      ACCL_PRIMS_UNROLL
      for (int j = 0; j < kElems; ++j) {
        if (j >= cnt) break;
        r[j] = op_.postOp(r[j]);
      }
    }
    if (what & kOut) storeElems<kElems>(static_cast<T*>(output_) + out + e, r, cnt, proto() == kProtoLL128);
    Pack p;
    memcpy(&p, r, sizeof p);
    return p;
  }

  // A whole packet moves as one 16-byte vector when its address allows, else (1- and 2-byte
  // types) as 8- or 4-byte words: byte-typed copies (the copy collectives, point-to-point) of a
  // user buffer that is not 16-byte aligned would otherwise take one load per byte (issue 18
  // fault 8). LL128 (`ll128`) also moves 4-byte types as 8-byte words: its odd lines' user data
  // starts 120 bytes after the even lines', 8 mod 16, on every aligned buffer. Other wider types
  // and partial packets go element by element.
  template <int kElems>
  ACCL_SIMT_FN static void loadElems(T* dst, const T* src, int cnt, bool ll128) {
    if constexpr (kElems * sizeof(T) == 16) {
      if (cnt == kElems) {
        const uintptr_t at = reinterpret_cast<uintptr_t>(src);
        if (at % 16 == 0) {
          simt::Vec16 v = simt::load16(src);
          memcpy(dst, &v, 16);
          return;
        }
        if ((sizeof(T) < 4 || (ll128 && sizeof(T) == 4)) && at % 8 == 0) return copyWords<8, true>(dst, src);
        if (sizeof(T) < 4 && at % 4 == 0) return copyWords<4, true>(dst, src);
      }
    }
    ACCL_PRIMS_UNROLL
    for (int j = 0; j < kElems; ++j) {
      if (j >= cnt) break;
      dst[j] = src[j];
    }
  }
  template <int kElems>
  ACCL_SIMT_FN static void storeElems(T* dst, const T* src, int cnt, bool ll128) {
    if constexpr (kElems * sizeof(T) == 16) {
      if (cnt == kElems) {
        const uintptr_t at = reinterpret_cast<uintptr_t>(dst);
        if (at % 16 == 0) {
          simt::Vec16 v;
          memcpy(&v, src, 16);
          simt::store16(dst, v);
          return;
        }
        if ((sizeof(T) < 4 || (ll128 && sizeof(T) == 4)) && at % 8 == 0) return copyWords<8, false>(dst, src);
        if (sizeof(T) < 4 && at % 4 == 0) return copyWords<4, false>(dst, src);
      }
    }
    ACCL_PRIMS_UNROLL
    for (int j = 0; j < kElems; ++j) {
      if (j >= cnt) break;
      dst[j] = src[j];
    }
  }
  // 16 bytes as kWord-byte words; the user's side (`src` when kSrcAligned, else `dst`) is
  // kWord-aligned, the other is the packet in registers.
  template <int kWord, bool kSrcAligned>
  ACCL_SIMT_FN static void copyWords(T* dst, const T* src) {
    using Word = std::conditional_t<kWord == 8, uint64_t, uint32_t>;
    const char* from = reinterpret_cast<const char*>(kSrcAligned ? __builtin_assume_aligned(src, kWord) : src);
    char* to = reinterpret_cast<char*>(kSrcAligned ? static_cast<void*>(dst) : __builtin_assume_aligned(dst, kWord));
    ACCL_PRIMS_UNROLL
    for (int k = 0; k < 16 / kWord; ++k) {
      Word w;
      memcpy(&w, from + k * kWord, kWord);
      memcpy(to + k * kWord, &w, kWord);
    }
  }

  ACCL_SIMT_FN static int packElems(size_t n, size_t e, int perPack) {
    if (e >= n) return 0;
    return n - e < size_t(perPack) ? int(n - e) : perPack;
  }

  // ---- 2. data, per protocol (data warps) --------------------------------------------------------

  // Receive sources a step reduces: every receive peer when it also reads the input, else the
  // first (a copy from the one peer that forwards the data).
  ACCL_SIMT_FN int recvSources(unsigned what) const { return (what & kRecv) ? ((what & kIn) ? nRecv_ : 1) : 0; }

  // Each of the first `count` peers' slot of its current step (from the slot areas and strides
  // read when the Prims was built), null for the rest. Once per step, in registers.
  template <class Ptr, class Byte, int kN>
  ACCL_SIMT_FN static void stepSlots(Ptr (&out)[kN], Byte* const (&slots)[kN], const uint32_t (&stride)[kN],
                                     const uint64_t (&steps)[kN], int count) {
    ACCL_PRIMS_UNROLL
    for (int i = 0; i < kN; ++i)
      out[i] = i < count ? reinterpret_cast<Ptr>(slots[i] + (steps[i] % kFifoSteps) * stride[i]) : nullptr;
  }

  ACCL_SIMT_FN void moveSimple(unsigned what, size_t in, size_t out, size_t n) {
    constexpr int kPer = 16 / int(sizeof(T));
    const size_t packs = (n + kPer - 1) / kPer;
    const int nSrc = recvSources(what);
    const size_t stride = size_t(dataWarps_) * simt::kWarpSize;
    const char* src[kMaxRecv > 0 ? kMaxRecv : 1];
    stepSlots(src, recvSlots_, recvStride_, recvStep_, nSrc);
    char* dst[kMaxSend > 0 ? kMaxSend : 1];
    stepSlots(dst, sendSlots_, sendStride_, sendStep_, (what & kSend) ? nSend_ : 0);
    for (size_t base = size_t(dataTid_); base < packs; base += kUnroll * stride) {
      // Every load of the kUnroll packets is issued before the first packet is reduced.
      Pack rp[kUnroll][kMaxRecv > 0 ? kMaxRecv : 1] = {};
      ACCL_PRIMS_UNROLL
      for (int u = 0; u < kUnroll; ++u) {
        const size_t p = base + u * stride;
        ACCL_PRIMS_UNROLL
        for (int i = 0; i < kMaxRecv; ++i)
          if (i < nSrc && p < packs) rp[u][i] = simt::loadSlot16(src[i] + p * 16);
      }
      ACCL_PRIMS_UNROLL
      for (int u = 0; u < kUnroll; ++u) {
        const size_t p = base + u * stride;
        if (p >= packs) break;
        const size_t e = p * kPer;
        const Pack v = compute<16>(what, rp[u], nSrc, in, out, e, packElems(n, e, kPer));
        if (what & kSend) {
          ACCL_PRIMS_UNROLL
          for (int i = 0; i < kMaxSend; ++i)
            if (i < nSend_) simt::storeSlot16(dst[i] + p * 16, v);
        }
      }
    }
  }

  ACCL_SIMT_FN bool moveLL(unsigned what, size_t in, size_t out, size_t n) {
    constexpr int kPer = 8 / int(sizeof(T)) > 0 ? 8 / int(sizeof(T)) : 1;  // elements per 16-byte LL line
    const size_t lines = (n * sizeof(T) + 7) / 8;
    const int nSrc = recvSources(what);
    const size_t stride = size_t(dataWarps_) * simt::kWarpSize;
    const uint64_t* src[kMaxRecv > 0 ? kMaxRecv : 1];
    stepSlots(src, recvSlots_, recvStride_, recvStep_, nSrc);
    uint64_t* dst[kMaxSend > 0 ? kMaxSend : 1];
    stepSlots(dst, sendSlots_, sendStride_, sendStep_, (what & kSend) ? nSend_ : 0);
    for (size_t l = size_t(dataTid_); l < lines; l += stride) {
      Pack rp[kMaxRecv > 0 ? kMaxRecv : 1] = {};
      ACCL_PRIMS_UNROLL
      for (int i = 0; i < kMaxRecv; ++i) {
        if (i >= nSrc) break;
        const uint64_t* line = src[i] + 2 * l;
        const uint32_t flag = uint32_t(recvStep_[i] + 1);
        uint64_t data = 0;
        if (!simt::spinUntil([&] { return simt::llTryLoadLine(line, flag, data); }, abortFlag_)) return false;
        rp[i].lo = data;
      }
      const size_t e = l * kPer;
      const Pack v = compute<8>(what, rp, nSrc, in, out, e, packElems(n, e, kPer));
      if (what & kSend) {
        ACCL_PRIMS_UNROLL
        for (int i = 0; i < kMaxSend; ++i)
          if (i < nSend_) simt::llStoreLine(dst[i] + 2 * l, v.lo, uint32_t(sendStep_[i] + 1));
      }
    }
    if (what & kSend) cleanLL(dst, lines);
    return true;
  }

  // LL flags are the low 32 bits of step + 1: a line no step has written for 2^32 steps would be
  // accepted, stale, when the flags come round (issue 18 fault 9). Once every kLLCleanSteps steps
  // (the kFifoSteps steps that start such a period, so every slot is reached) the sender also
  // writes the rest of the slot with the current flag, so no line is ever older than that.
  // `slots`: each send peer's LL slot of this step (stepSlots).
  ACCL_SIMT_FN void cleanLL(uint64_t* const (&slots)[kMaxSend > 0 ? kMaxSend : 1], size_t usedLines) {
    const size_t stride = size_t(dataWarps_) * simt::kWarpSize;
    ACCL_PRIMS_UNROLL
    for (int i = 0; i < kMaxSend; ++i) {
      if (i >= nSend_ || sendStep_[i] % kLLCleanSteps >= kFifoSteps) continue;
      const uint32_t flag = uint32_t(sendStep_[i] + 1);
      for (size_t l = usedLines + size_t(dataTid_); l < sendStride_[i] / 16; l += stride)
        simt::llStoreLine(slots[i] + 2 * l, 0, flag);
    }
  }

  // LL128: each data warp reads kLL128Unroll of its line groups per iteration (groups g,
  // g + dataWarps_, ...: as before one group per warp and pass, so each load instruction of the
  // block still covers consecutive lines), every group's loads in flight before its flags are
  // checked (issue 18 fault 8: one 16-byte load, then a spin, per group left the memory latency
  // exposed). A tree's Prims (up to three sources) keep 2 in flight per source: see docs/prims.md
  // for the register figures behind the choice.
  static constexpr int kLL128Unroll = kMaxRecv <= 1 && kMaxSend <= 1 ? 4 : 1;

  ACCL_SIMT_FN bool moveLL128(unsigned what, size_t in, size_t out, size_t n) {
    constexpr int kPerLine = simt::kLL128LinesPerWarp;
    constexpr int kU = kLL128Unroll;
    constexpr int kSrc = kMaxRecv > 0 ? kMaxRecv : 1;
    const size_t lines = (n * sizeof(T) + kLL128LineDataBytes - 1) / kLL128LineDataBytes;
    const size_t groups = (lines + kPerLine - 1) / kPerLine;
    const int lane = dataTid_ % simt::kWarpSize;
    const int part = lane % simt::kLL128LanesPerLine;
    const int lineInGroup = lane / simt::kLL128LanesPerLine;
    const int partBytes = part == simt::kLL128LanesPerLine - 1 ? 8 : 16;
    const int nSrc = recvSources(what);
    const uint64_t* src[kSrc];
    stepSlots(src, recvSlots_, recvStride_, recvStep_, nSrc);
    uint64_t* dst[kMaxSend > 0 ? kMaxSend : 1];
    stepSlots(dst, sendSlots_, sendStride_, sendStep_, (what & kSend) ? nSend_ : 0);
    const size_t warps = size_t(dataWarps_);
    const size_t lineStride = warps * kPerLine;  // lines from one of the warp's groups to its next
    for (size_t g = size_t(dataTid_ / simt::kWarpSize); g < groups; g += kU * warps) {
      // The groups of this pass (fewer than kU at the end), the same bits in every lane.
      unsigned todo = 0;
      ACCL_PRIMS_UNROLL
      for (int u = 0; u < kU; ++u)
        if (g + u * warps < groups) todo |= 1u << u;
      const size_t l = g * kPerLine + lineInGroup;  // this lane's line of the pass's first group
      Pack rp[kSrc][kU] = {};
      ACCL_PRIMS_UNROLL
      for (int i = 0; i < kMaxRecv; ++i) {
        if (i >= nSrc) break;
        const uint64_t* line = src[i] + l * simt::kLL128LineWords;
        const uint64_t flag = recvStep_[i] + 1;
        unsigned late = todo;  // re-polled until every group of the pass is complete
        if (!simt::warpSpinUntil(
                [&] {
                  late = simt::ll128TryLoadLines(line, lineStride * simt::kLL128LineWords, flag, late, rp[i]);
                  return late == 0;
                },
                abortFlag_))
          return false;
      }
      ACCL_PRIMS_UNROLL
      for (int u = 0; u < kU; ++u) {
        if (((todo >> u) & 1u) == 0) break;
        const size_t lu = l + u * lineStride;
        Pack rs[kSrc];
        ACCL_PRIMS_UNROLL
        for (int i = 0; i < kSrc; ++i) rs[i] = rp[i][u];
        const size_t e = (lu * kLL128LineDataBytes + size_t(part) * 16) / sizeof(T);
        const Pack v = compute<16>(what, rs, nSrc, in, out, e, packElems(n, e, partBytes / int(sizeof(T))));
        if (what & kSend) {
          ACCL_PRIMS_UNROLL
          for (int i = 0; i < kMaxSend; ++i)
            if (i < nSend_)
              simt::ll128Store(dst[i] + lu * simt::kLL128LineWords, v.lo, v.hi, sendStep_[i] + 1);
        }
      }
    }
    return true;
  }

  const char* recvSlots_[kMaxRecv > 0 ? kMaxRecv : 1] = {};  // each peer's slot area of proto_
  uint32_t recvStride_[kMaxRecv > 0 ? kMaxRecv : 1] = {};    // bytes from one slot to the next
  char* sendSlots_[kMaxSend > 0 ? kMaxSend : 1] = {};
  uint32_t sendStride_[kMaxSend > 0 ? kMaxSend : 1] = {};
  PrimsConn* myConn_ = nullptr;       // the peer lane's connection (its step is written back here)
  const uint64_t* myWait_ = nullptr;  // ...the counter it waits on: tail (receive), head (send)
  uint64_t* myPost_ = nullptr;        // ...the counter it posts: head (receive), tail (send)
  uint32_t* myStepInfo_ = nullptr;    // ...the step info line (send), or null
  uint64_t recvStep_[kMaxRecv > 0 ? kMaxRecv : 1] = {};
  uint64_t sendStep_[kMaxSend > 0 ? kMaxSend : 1] = {};
  const void* input_;
  void* output_;
  const uint32_t* abortFlag_;
  Op op_;
  ProtoId proto_;
  bool contribution_;
  int nRecv_ = 0, nSend_ = 0;
  int nWarps_ = 0, nThreads_ = 0, tid_ = 0, barA_ = 1, barB_ = 2;
  int dataWarps_ = 1;  // warps 0..dataWarps_-1 of the group move data
  int dataTid_ = -1;   // this thread's index among the data threads, or -1
  int myPeer_ = -1;    // the peer this lane waits and posts for (receive peers first), or -1
  bool peerThread_ = false;
  bool dedicated_ = false;
  bool aborted_ = false;
};

}  // namespace accl
