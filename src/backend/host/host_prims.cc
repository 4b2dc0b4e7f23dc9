// HostPrims: the schedule steps over the Simple and LL FIFO protocols, with one thread; the FIFO
// ends themselves are fifo_end.h's.
#include "backend/host/host_prims.h"

#include <cstring>

#include "backend/host/landings.h"
#include "device/common/chunk_loop.h"
#include "device/common/reduce_buffers.h"
#include "device/common/dtypes.h"
#include "util/check.h"

namespace accl {

HostPrims::HostPrims(const HostPrimsArgs& args)
    : args_(args), simple_(args.proto != kProtoLL), elemSize_(dtypeSize(args.type)) {}

size_t HostPrims::chunkCapacity(const FifoLayout& layout, ProtoId proto, size_t elemSize) {
  size_t bytes = proto == kProtoLL ? layout.llSlotPayload() : layout.simpleSlotBytes;
  size_t elems = bytes / elemSize;
  return elems > 0 ? elems : 1;
}

char* HostPrims::scratch(int i, size_t bytes) {
  std::vector<char>& s = scratch_[i];
  if (s.size() < bytes + 8) s.resize(bytes + 8);
  return s.data();
}

const char* HostPrims::waitRecv(int i, size_t bytes) {
  const HostConnEnd& c = args_.recv[i];
  if (simple_) {
    status_ = waitSimpleData(c, *args_.wait, args_.what);
    return c.fifo->simpleSlot(c.fifo->step);
  }
  char* out = scratch(i, divUp(bytes, kLLWordPayload) * kLLWordPayload);
  status_ = waitLLData(c, bytes, out, *args_.wait, args_.what);
  return out;
}

char* HostPrims::waitSend(int i) {
  const HostConnEnd& c = args_.send[i];
  status_ = waitSendSlot(c, *args_.wait, args_.what);
  return simple_ ? c.fifo->simpleSlot(c.fifo->step) : nullptr;
}

void HostPrims::postSend(int i, const char* payload, size_t bytes) {
  FifoView& f = *args_.send[i].fifo;
  if (!simple_) writeLLSlot(f, payload, bytes);  // Simple: the payload is already in the slot
  publishTail(f, simple_ ? fifoStepInfo(bytes, false)
                         : fifoStepInfo(divUp(bytes, kLLWordPayload) * sizeof(LLWord), true));
}

const char* HostPrims::userSendSource(unsigned what, size_t in, size_t out, size_t bytes, UserBufferReg* reg) {
  *reg = UserBufferReg{};
  if (!args_.userSends || !simple_ || !(what & kSend) || !UserSends::allowed(args_.send, args_.nSend, bytes))
    return nullptr;
  const char* src = nullptr;
  const bool inputAsIs = !args_.inputIsContribution || UserSends::inputSentAsIs(args_.op);
  if (what & kOut)
    src = outPtr(out);  // computed there first, then sent from there
  else if ((what & kIn) && !(what & (kRecv | kPost)) && inputAsIs)
    src = inPtr(in);
  else
    return nullptr;  // a value computed into the slot (recvReduceSend) or scaled on the way
  // A device that sends only from registered memory: the step must lie in a registered buffer,
  // usually the one the previous step lay in (the registry's lookup takes a process-wide lock).
  if (UserSends::needRegistration(args_.send, args_.nSend) && !registeredRange(src, bytes, reg)) return nullptr;
  return src;
}

bool HostPrims::registeredRange(const char* p, size_t n, UserBufferReg* reg) {
  if (!lastReg_.covers(p, n) && !(args_.registrations && args_.registrations->registeredBuffer(p, n, &lastReg_)))
    return false;
  *reg = lastReg_;
  return true;
}

bool HostPrims::landsInOutput(unsigned what, size_t out, size_t bytes, UserBufferReg* reg) {
  *reg = UserBufferReg{};
  if (!simple_ || args_.nRecv != 1 || !(what & kOut) || (what & (kIn | kPost)) || !mayLand(args_.recv[0], bytes))
    return false;
  return !args_.recv[0].landRegisteredOnly || registeredRange(outPtr(out), bytes, reg);
}

void HostPrims::step(unsigned what, size_t in, size_t out, size_t n) {
  if (status_ != ncclSuccess) return;
  const size_t bytes = n * elemSize_;
  // Zero copy: the value goes from the user's memory to the network (user_sends.h).
  UserBufferReg userReg;
  const char* userSrc = userSendSource(what, in, out, bytes, &userReg);
  const bool inputAsIs = userSrc && !(what & kOut);  // nothing to compute: the input is the value
  // The output must not change under a zero-copy send that still reads it (in place, a tree's
  // other phase).
  if ((what & kOut) && args_.userSends && args_.userSends->any()) {
    status_ = args_.userSends->waitClear(outPtr(out), bytes, *args_.wait, args_.what);
    if (status_ != ncclSuccess) return;
  }
  const char* received[kMaxTreeChildren] = {};
  bool landed = false;
  if (what & kRecv) {
    // A step that only stores what it receives may have it land in the output (landings.h).
    UserBufferReg landReg;
    const bool land = landsInOutput(what, out, bytes, &landReg);
    if (land) publishLanding(args_.recv[0], outPtr(out), bytes, landReg);
    for (int i = 0; i < args_.nRecv; ++i) {
      received[i] = waitRecv(i, bytes);
      if (status_ != ncclSuccess) {
        if (land) withdrawLanding(args_.recv[0], args_.what);
        return;
      }
    }
    landed = land && stepLanded(args_.recv[0]);
  }

  // Where the value of this step is computed: the output, else (Simple) straight into the first
  // send slot, else a scratch buffer.
  char* firstSlot = nullptr;
  char* dst;
  if (what & kOut) {
    dst = outPtr(out);
  } else if (inputAsIs) {
    dst = const_cast<char*>(userSrc);  // read only
  } else if ((what & kSend) && simple_) {
    dst = firstSlot = waitSend(0);
    if (status_ != ncclSuccess) return;
  } else {
    dst = scratch(kMaxTreeChildren, bytes);
  }

  const char* value = dst;
  const unsigned pre = args_.inputIsContribution ? kPreOpB : 0u;
  const unsigned post = (what & kPost) ? kPostOp : 0u;
  ncclResult_t res = ncclSuccess;
  if ((what & kRecv) && (what & kIn)) {
    for (int i = 0; i < args_.nRecv && res == ncclSuccess; ++i) {
      const unsigned last = i == args_.nRecv - 1 ? post : 0u;
      res = i == 0 ? reduceBuffers(dst, received[0], inPtr(in), n, args_.type, args_.op, pre | last)
                   : reduceBuffers(dst, dst, received[i], n, args_.type, args_.op, last);
    }
  } else if (what & kRecv) {
    if (!(what & kOut) && !firstSlot)
      value = received[0];  // forwarded as is (LL)
    else if (!landed)
      std::memcpy(dst, received[0], bytes);  // landed: already in the output (dst)
  } else if ((what & kIn) && !inputAsIs) {
    res = args_.inputIsContribution ? applyPreOp(dst, inPtr(in), n, args_.type, args_.op)
                                    : (std::memmove(dst, inPtr(in), bytes), ncclSuccess);
    if (res == ncclSuccess && post) res = applyPostOp(dst, dst, n, args_.type, args_.op);
  }
  if (res != ncclSuccess) {
    status_ = res;
    return;
  }

  if (what & kSend) {
    for (int i = 0; i < args_.nSend; ++i) {
      char* slot = (i == 0 && firstSlot) ? firstSlot : waitSend(i);
      if (status_ != ncclSuccess) return;
      if (userSrc) {
        args_.userSends->publish(args_.send[i], userSrc, bytes, userReg);
        continue;
      }
      if (simple_ && slot != value) std::memcpy(slot, value, bytes);
      postSend(i, value, bytes);
    }
  }
  if (what & kRecv)
    for (int i = 0; i < args_.nRecv; ++i) releaseHead(*args_.recv[i].fifo);
}

void HostPrims::send(size_t in, size_t n) { step(kIn | kSend, in, 0, n); }
void HostPrims::recv(size_t out, size_t n) { step(kRecv | kOut, 0, out, n); }
void HostPrims::recvReduceSend(size_t in, size_t n) { step(kRecv | kIn | kSend, in, 0, n); }
void HostPrims::recvReduceCopySend(size_t in, size_t out, size_t n, bool postOp) {
  step(kRecv | kIn | kOut | kSend | (postOp ? kPost : 0u), in, out, n);
}
void HostPrims::recvCopySend(size_t out, size_t n) { step(kRecv | kOut | kSend, 0, out, n); }
void HostPrims::copySend(size_t in, size_t out, size_t n, bool postOp) {
  step(kIn | kOut | kSend | (postOp ? kPost : 0u), in, out, n);
}
void HostPrims::recvReduceCopy(size_t in, size_t out, size_t n, bool postOp) {
  step(kRecv | kIn | kOut | (postOp ? kPost : 0u), in, out, n);
}
void HostPrims::localCopy(size_t in, size_t out, size_t n, bool postOp) {
  step(kIn | kOut | (postOp ? kPost : 0u), in, out, n);
}

}  // namespace accl
