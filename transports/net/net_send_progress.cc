// The sending end's proxy progress (see net_conn.h): every step the Prims published into the
// local staging FIFO (staging tail > step) goes out as a header and, when it carries bytes, the
// slot's bytes; once the device reports both sent, the proxy releases the staging slot by
// publishing head = step + 1, which the sender's Prims waits on.
#include <atomic>

#include "device/common/fifo_signal.h"
#include "util/check.h"
#include "transports/net/net_conn.h"
#include "transports/net/net_user_send.h"

namespace accl {
namespace {

std::atomic_ref<uint64_t> counter(FifoCounter* c) { return std::atomic_ref<uint64_t>(c->value); }

size_t stepBytes(uint32_t info) { return info & ~(kFifoStepLL | kFifoStepUserPtr); }

// Whether the step's requests are done (each tested once finished is not tested again).
ncclResult_t testStep(NetConnResources* r, NetConnResources::Step& st, bool* done) {
  int d = 0;
  if (st.hdr) {
    ncclResult_t res = r->net->test(st.hdr, &d, nullptr);
    if (res != ncclSuccess) return r->failWith(res, "sending a step header");
    if (!d) return *done = false, ncclSuccess;
    st.hdr = nullptr;
  }
  if (st.data) {
    ncclResult_t res = r->net->test(st.data, &d, nullptr);
    if (res != ncclSuccess) return r->failWith(res, "sending a step's data");
    if (!d) return *done = false, ncclSuccess;
    st.data = nullptr;
  }
  *done = true;
  return ncclSuccess;
}

}  // namespace

ncclResult_t netSendProgress(NetConnResources* r, bool* progressed) {
  if (r->failed) return ncclRemoteError;
  const uint64_t published = counter(r->tail()).load(std::memory_order_acquire);
  while (r->postStep < published) {
    const uint64_t s = r->postStep;
    NetConnResources::Step& st = r->steps[s % kFifoSteps];
    const uint32_t info = std::atomic_ref<uint32_t>(r->tail()->stepInfo[s % kFifoSteps]).load(std::memory_order_relaxed);
    const size_t bytes = stepBytes(info);
    const bool ll = (info & kFifoStepLL) != 0;
    if (bytes > (ll ? r->llSlotBytes() : r->layout.simpleSlotBytes))
      return r->failWith(ncclInternalError, "a step larger than its slot was published");
    void* profHandle = r->prof ? netProfileStepBegin(r, s, bytes) : nullptr;
    if (!r->hdrPosted) {
      NetStepHeader* h = &r->headers[s % kFifoSteps];
      h->info = netWireInfo(info);
      h->step = static_cast<uint32_t>(s);
      NetRequest* req = nullptr;
      ncclResult_t res =
          r->net->isendProfiled(r->sendComm, h, sizeof(*h), kNetHeaderTag, r->mhandle, profHandle, &req);
      if (res != ncclSuccess) return r->failWith(res, "posting a step header");
      if (!req) break;
      st.hdr = req;
      st.data = nullptr;
      st.info = info;
      st.complete = false;
      r->hdrPosted = true;
      *progressed = true;
    }
    if (bytes > 0) {
      const void* src = nullptr;
      NetMemHandle* mh = nullptr;
      ACCL_CHECK(netStepSource(r, s, info, &src, &mh));
      NetRequest* req = nullptr;
      ncclResult_t res =
          r->net->isendProfiled(r->sendComm, const_cast<void*>(src), bytes, kNetDataTag, mh, profHandle, &req);
      if (res != ncclSuccess) return r->failWith(res, "posting a step's data");
      if (!req) break;
      st.data = req;
      netCountUserSend(r, s, info);
    }
    r->hdrPosted = false;
    r->postStep++;
    *progressed = true;
  }
  while (r->doneStep < r->postStep) {
    bool done = false;
    ACCL_CHECK(testStep(r, r->steps[r->doneStep % kFifoSteps], &done));
    if (!done) break;
    r->doneStep++;
    counter(r->head).store(r->doneStep, std::memory_order_seq_cst);
    wakeSleepers(r->head->sleepers, r->head->value);
    if (r->prof) netProfileStepDone(r, r->doneStep - 1);
    *progressed = true;
  }
  // An operation the backend finished after its last step went out ends here.
  if (r->prof) r->profOps->retire(*r->prof, r->doneStep);
  if (r->closing && !r->byeDone && r->doneStep == published) {
    if (!r->byeReq) {
      NetStepHeader* h = &r->headers[r->doneStep % kFifoSteps];
      h->info = kNetGoodbyeInfo;
      h->step = static_cast<uint32_t>(r->doneStep);
      ncclResult_t res = r->net->isend(r->sendComm, h, sizeof(*h), kNetHeaderTag, r->mhandle, &r->byeReq);
      if (res != ncclSuccess) return r->failWith(res, "saying goodbye");
    }
    if (r->byeReq) {
      int done = 0;
      ncclResult_t res = r->net->test(r->byeReq, &done, nullptr);
      if (res != ncclSuccess) return r->failWith(res, "saying goodbye");
      if (done) r->byeReq = nullptr, r->byeDone = true, *progressed = true;
    }
  }
  return ncclSuccess;
}

}  // namespace accl
