// IB network data path: the registration cache, QP creation and the INIT -> RTR -> RTS
// transitions, and the receiver-granted protocol. The receiver posts one receive per QP and
// RDMA-writes a clear-to-send entry per buffer (address, size, rkey, tag) into the sender's FIFO;
// the sender matches its sends to a slot by tag, RDMA-writes the data split across the QPs
// (128-byte aligned parts), and ends each QP's share with a zero-byte write-with-immediate that
// carries the size (several buffers: the sizes go first into the receiver's sizes FIFO). Work
// completion errors fail the comm with ncclRemoteError naming the peer.
#if __has_include(<infiniband/verbs.h>)
#include <arpa/inet.h>
#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "transports/net/ib/ib_net_internal.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace accl::ib {

namespace {

enum WrKind : uint64_t { kKindData = 1, kKindSizes = 2, kKindImm = 3, kKindCts = 4, kKindRecv = 5 };
constexpr size_t kMaxWrBytes = size_t(1) << 30;

uint64_t wrId(WrKind kind, uint64_t slot) { return (uint64_t(kind) << 32) | slot; }
WrKind wrKind(uint64_t id) { return static_cast<WrKind>(id >> 32); }
uint64_t wrSlot(uint64_t id) { return id & 0xffffffffu; }

const char* kindName(WrKind k) {
  switch (k) {
    case kKindData: return "data write";
    case kKindSizes: return "sizes write";
    case kKindImm: return "write with immediate";
    case kKindCts: return "clear-to-send write";
    case kKindRecv: return "receive";
  }
  return "unknown";
}

int pickTrafficClass(const char* param, int configValue) {
  int64_t v = paramInt(param);
  if (v >= 0) return static_cast<int>(v);
  return configValue >= 0 ? configValue : 0;
}

ncclResult_t wcError(const IbvTable* ibv, IbDev* dev, const std::string& peer, const ibv_wc& wc,
                     ncclResult_t* failed) {
  *failed = ncclRemoteError;
  return fail(ncclRemoteError,
              "NET/IB: %s:%d: work completion error on the connection to %s: %s (status %d, %s, vendor error %u, "
              "QP %u)",
              dev->devName.c_str(), dev->port, peer.c_str(), ibv->statusText(wc.status), static_cast<int>(wc.status),
              kindName(wrKind(wc.wr_id)), wc.vendor_err, wc.qp_num);
}

ncclResult_t postSend(const IbvTable* ibv, IbDev* dev, const std::string& peer, ibv_qp* qp, ibv_send_wr* wr,
                      ncclResult_t* failed) {
  ibv_send_wr* bad = nullptr;
  int rc = ibv_post_send(qp, wr, &bad);
  if (rc == 0) return ncclSuccess;
  *failed = ncclSystemError;
  return fail(ncclSystemError, "NET/IB: %s:%d: ibv_post_send on QP %u (connection to %s) failed: %s",
              dev->devName.c_str(), dev->port, qp->qp_num, peer.c_str(), strerror(rc));
}

// Drains the comm's CQ into its slots.
ncclResult_t pollSend(IbSendComm* c) {
  ibv_wc wcs[16];
  for (;;) {
    int n = ibv_poll_cq(c->q.cq, 16, wcs);
    if (n < 0) {
      c->failed = ncclSystemError;
      return fail(ncclSystemError, "NET/IB: ibv_poll_cq failed on the connection to %s", c->peer.c_str());
    }
    for (int i = 0; i < n; i++) {
      if (wcs[i].status != IBV_WC_SUCCESS) return wcError(c->ibv, c->q.dev, c->peer, wcs[i], &c->failed);
      if (wrKind(wcs[i].wr_id) != kKindImm) continue;
      IbSendSlot& s = c->slots[wrSlot(wcs[i].wr_id) % kFifoDepth];
      if (--s.pendingCompletions == 0) {
        for (int r = 0; r < s.nreqs; r++) {
          if (s.reqs[r]) s.reqs[r]->done = true;
          s.reqs[r] = nullptr;
        }
        s.busy = false;
      }
    }
    if (n < 16) return ncclSuccess;
  }
}

ncclResult_t pollRecv(IbRecvComm* c) {
  ibv_wc wcs[16];
  for (;;) {
    int n = ibv_poll_cq(c->q.cq, 16, wcs);
    if (n < 0) {
      c->failed = ncclSystemError;
      return fail(ncclSystemError, "NET/IB: ibv_poll_cq failed on the connection to %s", c->peer.c_str());
    }
    for (int i = 0; i < n; i++) {
      if (wcs[i].status != IBV_WC_SUCCESS) return wcError(c->ibv, c->q.dev, c->peer, wcs[i], &c->failed);
      if (wrKind(wcs[i].wr_id) != kKindRecv) continue;
      uint64_t slotIdx = wrSlot(wcs[i].wr_id) % kFifoDepth;
      IbRecvSlot& s = c->slots[slotIdx];
      if (wcs[i].wc_flags & IBV_WC_WITH_IMM) s.immSize = ntohl(wcs[i].imm_data);
      if (--s.pendingCompletions == 0) {
        IbRequest* r = s.req;
        for (int b = 0; b < s.n; b++)
          r->sizes[b] = s.n == 1 ? s.immSize : c->sizes[slotIdx * kNetMaxRecvs + b];
        r->done = true;
        s.req = nullptr;
        s.busy = false;
        c->inflight--;
      }
    }
    if (n < 16) return ncclSuccess;
  }
}

// Posts the writes of a fully matched slot on every QP.
ncclResult_t issueSlot(IbSendComm* c, uint64_t slotNum, const IbCts* cts) {
  IbSendSlot& s = c->slots[slotNum % kFifoDepth];
  int nqps = static_cast<int>(c->q.qps.size());
  uint64_t slotBase = (slotNum % kFifoDepth) * kNetMaxRecvs;
  if (s.nreqs > 1)
    for (int r = 0; r < s.nreqs; r++) c->sizesStage[slotBase + r] = static_cast<uint32_t>(s.reqs[r]->size);
  s.pendingCompletions = nqps;
  for (int qi = 0; qi < nqps; qi++) {
    std::vector<ibv_send_wr> wrs;
    std::vector<ibv_sge> sges;
    wrs.reserve(4 * kNetMaxRecvs + 2);
    sges.reserve(4 * kNetMaxRecvs + 2);
    for (int r = 0; r < s.nreqs; r++) {
      IbRequest* req = s.reqs[r];
      size_t chunk = (req->size + nqps - 1) / nqps;
      chunk = (chunk + kSplitAlign - 1) / kSplitAlign * kSplitAlign;
      size_t off = chunk * qi;
      if (off >= req->size) continue;
      size_t len = std::min(chunk, req->size - off);
      for (size_t done = 0; done < len;) {
        size_t piece = std::min(kMaxWrBytes, len - done);
        ibv_sge sge{};
        sge.addr = reinterpret_cast<uint64_t>(req->data) + off + done;
        sge.length = static_cast<uint32_t>(piece);
        sge.lkey = req->mh->mr->lkey;
        sges.push_back(sge);
        ibv_send_wr wr{};
        wr.wr_id = wrId(kKindData, slotNum);
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.num_sge = 1;
        wr.wr.rdma.remote_addr = cts[r].addr + off + done;
        wr.wr.rdma.rkey = cts[r].rkey;
        wrs.push_back(wr);
        done += piece;
      }
    }
    if (qi == 0 && s.nreqs > 1) {
      ibv_sge sge{};
      sge.addr = reinterpret_cast<uint64_t>(&c->sizesStage[slotBase]);
      sge.length = static_cast<uint32_t>(s.nreqs * sizeof(uint32_t));
      sge.lkey = c->sizesMr->lkey;
      sges.push_back(sge);
      ibv_send_wr wr{};
      wr.wr_id = wrId(kKindSizes, slotNum);
      wr.opcode = IBV_WR_RDMA_WRITE;
      wr.num_sge = 1;
      wr.wr.rdma.remote_addr = c->remoteSizesAddr + slotBase * sizeof(uint32_t);
      wr.wr.rdma.rkey = c->remoteSizesRkey;
      wrs.push_back(wr);
    }
    ibv_send_wr imm{};
    imm.wr_id = wrId(kKindImm, slotNum);
    imm.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    imm.send_flags = IBV_SEND_SIGNALED;
    imm.num_sge = 0;
    imm.imm_data = htonl(s.nreqs == 1 ? static_cast<uint32_t>(s.reqs[0]->size) : 0);
    wrs.push_back(imm);
    for (size_t w = 0; w < wrs.size(); w++) {
      if (wrs[w].num_sge) wrs[w].sg_list = &sges[w];
      wrs[w].next = w + 1 < wrs.size() ? &wrs[w + 1] : nullptr;
    }
    ACCL_CHECK(postSend(c->ibv, c->q.dev, c->peer, c->q.qps[qi], wrs.data(), &c->failed));
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t ibRegMr(const IbvTable* ibv, IbDev* dev, void* data, size_t size, IbMemHandle** out) {
  auto mh = std::make_unique<IbMemHandle>();
  mh->dev = dev;
  if (size == 0 && !data) {
    *out = mh.release();
    return ncclSuccess;
  }
  long pageSize = sysconf(_SC_PAGESIZE);
  uintptr_t page = pageSize > 0 ? static_cast<uintptr_t>(pageSize) : 4096;
  uintptr_t a = reinterpret_cast<uintptr_t>(data);
  uintptr_t begin = a / page * page;
  uintptr_t end = (a + std::max<size_t>(size, 1) + page - 1) / page * page;
  std::lock_guard<std::mutex> lock(dev->mrMu);
  for (auto& e : dev->mrCache) {
    if (e->begin <= begin && e->end >= end) {
      e->refs++;
      mh->entry = e.get();
      mh->mr = e->mr;
      *out = mh.release();
      return ncclSuccess;
    }
  }
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  ibv_mr* mr = nullptr;
  if (dev->relaxedOrdering && ibv->regMrIova2)
    mr = ibv->regMrIova2(dev->pd, reinterpret_cast<void*>(begin), end - begin, begin,
                         static_cast<unsigned>(access | IBV_ACCESS_RELAXED_ORDERING));
  if (!mr) mr = ibv->regMr(dev->pd, reinterpret_cast<void*>(begin), end - begin, access);
  if (!mr)
    return fail(ncclSystemError, "NET/IB: %s:%d: ibv_reg_mr of %p (%zu bytes) failed: %s", dev->devName.c_str(),
                dev->port, data, size, strerror(errno));
  auto entry = std::make_unique<IbDev::CachedMr>(IbDev::CachedMr{begin, end, mr, 1});
  mh->entry = entry.get();
  mh->mr = mr;
  dev->mrCache.push_back(std::move(entry));
  ACCL_TRACE(ACCL_LOG_NET, "NET/IB: registered [%p, %p) lkey 0x%x rkey 0x%x", reinterpret_cast<void*>(begin),
             reinterpret_cast<void*>(end), mr->lkey, mr->rkey);
  *out = mh.release();
  return ncclSuccess;
}

ncclResult_t ibDeregMr(const IbvTable* ibv, IbMemHandle* mh) {
  std::unique_ptr<IbMemHandle> owned(mh);
  if (!mh->entry) return ncclSuccess;
  IbDev* dev = mh->dev;
  std::lock_guard<std::mutex> lock(dev->mrMu);
  for (auto it = dev->mrCache.begin(); it != dev->mrCache.end(); ++it) {
    if (it->get() != mh->entry) continue;
    if (--(*it)->refs == 0) {
      ibv->deregMr((*it)->mr);
      dev->mrCache.erase(it);
    }
    return ncclSuccess;
  }
  return fail(ncclInvalidArgument, "NET/IB: deregMr of a handle that is not registered");
}

ncclResult_t ibCreateQps(const IbvTable* ibv, IbDev* dev, int nqps, int remoteAccess, IbQps* out) {
  out->dev = dev;
  out->cq = ibv->createCq(dev->ctx, (512 + 256 + 64) * nqps, nullptr, nullptr, 0);
  if (!out->cq)
    return fail(ncclSystemError, "NET/IB: %s:%d: ibv_create_cq failed: %s", dev->devName.c_str(), dev->port,
                strerror(errno));
  for (int i = 0; i < nqps; i++) {
    ibv_qp_init_attr init{};
    init.send_cq = out->cq;
    init.recv_cq = out->cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = 512;
    init.cap.max_recv_wr = 256;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    ibv_qp* qp = ibv->createQp(dev->pd, &init);
    if (!qp)
      return fail(ncclSystemError, "NET/IB: %s:%d: ibv_create_qp failed: %s", dev->devName.c_str(), dev->port,
                  strerror(errno));
    out->qps.push_back(qp);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = static_cast<uint8_t>(dev->port);
    a.qp_access_flags = static_cast<unsigned>(remoteAccess);
    int rc = ibv->modifyQp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (rc != 0)
      return fail(ncclSystemError, "NET/IB: %s:%d: QP %u to INIT failed: %s", dev->devName.c_str(), dev->port,
                  qp->qp_num, strerror(rc));
  }
  return ncclSuccess;
}

ncclResult_t ibConnectQps(const IbvTable* ibv, IbQps* q, const IbConnInfo& remote, int trafficClass) {
  IbDev* dev = q->dev;
  int tc = pickTrafficClass("NCCL_IB_TC", trafficClass);
  int sl = pickTrafficClass("NCCL_IB_SL", trafficClass);
  for (size_t i = 0; i < q->qps.size(); i++) {
    ibv_qp* qp = q->qps[i];
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = static_cast<ibv_mtu>(std::min<int>(dev->portAttr.active_mtu, remote.mtu));
    a.dest_qp_num = remote.qpn[i];
    a.rq_psn = 0;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    if (dev->portAttr.link_layer == IBV_LINK_LAYER_ETHERNET) {
      a.ah_attr.is_global = 1;
      memcpy(a.ah_attr.grh.dgid.raw, remote.gid, 16);
      a.ah_attr.grh.sgid_index = static_cast<uint8_t>(dev->gidIndex);
      a.ah_attr.grh.hop_limit = 255;
      a.ah_attr.grh.traffic_class = static_cast<uint8_t>(tc);
    } else {
      a.ah_attr.is_global = 0;
      a.ah_attr.dlid = remote.lid;
    }
    a.ah_attr.sl = static_cast<uint8_t>(sl);
    a.ah_attr.port_num = static_cast<uint8_t>(dev->port);
    int rc = ibv->modifyQp(qp, &a,
                           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc != 0)
      return fail(ncclSystemError, "NET/IB: %s:%d: QP %u to RTR (peer QP %u) failed: %s", dev->devName.c_str(),
                  dev->port, qp->qp_num, remote.qpn[i], strerror(rc));
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = static_cast<uint8_t>(paramInt("NCCL_IB_TIMEOUT"));
    a.retry_cnt = static_cast<uint8_t>(paramInt("NCCL_IB_RETRY_CNT"));
    a.rnr_retry = 7;
    a.sq_psn = 0;
    a.max_rd_atomic = 1;
    rc = ibv->modifyQp(qp, &a,
                       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                           IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc != 0)
      return fail(ncclSystemError, "NET/IB: %s:%d: QP %u to RTS failed (NCCL_IB_TIMEOUT %lld, NCCL_IB_RETRY_CNT %lld): %s",
                  dev->devName.c_str(), dev->port, qp->qp_num, static_cast<long long>(paramInt("NCCL_IB_TIMEOUT")),
                  static_cast<long long>(paramInt("NCCL_IB_RETRY_CNT")), strerror(rc));
  }
  return ncclSuccess;
}

void ibDestroyQps(const IbvTable* ibv, IbQps* q) {
  for (ibv_qp* qp : q->qps) ibv->destroyQp(qp);
  q->qps.clear();
  if (q->cq) ibv->destroyCq(q->cq);
  q->cq = nullptr;
}

ncclResult_t ibIsend(IbSendComm* c, void* data, size_t size, int tag, IbMemHandle* mh, IbRequest** request) {
  *request = nullptr;
  if (c->failed != ncclSuccess) return c->failed;
  if (size > 0 && (!mh || !mh->mr))
    return fail(ncclInvalidArgument, "NET/IB: isend of %zu bytes without a registration (connection to %s)", size,
                c->peer.c_str());
  ACCL_CHECK(pollSend(c));  // frees slots whose sends completed
  uint64_t slotNum = c->fifoHead;
  IbSendSlot& s = c->slots[slotNum % kFifoDepth];
  const IbCts* cts = &c->fifo[(slotNum % kFifoDepth) * kNetMaxRecvs];
  if (cts[0].idx != slotNum + 1) return ncclSuccess;  // the peer has not granted this slot yet
  std::atomic_thread_fence(std::memory_order_acquire);
  int nreqs = static_cast<int>(cts[0].nreqs);
  if (nreqs < 1 || nreqs > kNetMaxRecvs) {
    c->failed = ncclRemoteError;
    return fail(ncclRemoteError, "NET/IB: corrupt clear-to-send entry from %s (%d buffers)", c->peer.c_str(), nreqs);
  }
  for (int r = 1; r < nreqs; r++)
    if (cts[r].idx != slotNum + 1) return ncclSuccess;
  if (s.matched == 0) {
    if (s.busy) return ncclSuccess;  // its previous use has not completed
    s.nreqs = nreqs;
  }
  int match = -1;
  for (int r = 0; r < nreqs; r++)
    if (!s.reqs[r] && cts[r].tag == tag) {
      match = r;
      break;
    }
  if (match < 0) {  // sends and receives are matched in order: a foreign tag is a protocol error
    std::string tags;
    for (int r = 0; r < nreqs; r++) tags += (r ? "," : "") + std::to_string(cts[r].tag) + (s.reqs[r] ? "(taken)" : "");
    c->failed = ncclInvalidUsage;
    return fail(ncclInvalidUsage, "NET/IB: isend with tag %d does not match the receive posted by %s (tags %s)", tag,
                c->peer.c_str(), tags.c_str());
  }
  if (size > cts[match].size) {
    c->failed = ncclInvalidUsage;
    return fail(ncclInvalidUsage,
                "NET/IB: isend of %zu bytes (tag %d) would be truncated: the receive posted by %s has %llu bytes",
                size, tag, c->peer.c_str(), static_cast<unsigned long long>(cts[match].size));
  }
  auto* req = new IbRequest();
  req->isSend = true;
  req->sendComm = c;
  req->slot = slotNum;
  req->data = data;
  req->size = size;
  req->mh = mh;
  s.reqs[match] = req;
  s.busy = true;
  *request = req;
  if (++s.matched == s.nreqs) {
    s.matched = 0;
    c->fifoHead++;
    ACCL_CHECK(issueSlot(c, slotNum, cts));
  }
  return ncclSuccess;
}

ncclResult_t ibIrecv(IbRecvComm* c, int n, void** data, size_t* sizes, int* tags, IbMemHandle** mhs,
                     IbRequest** request) {
  *request = nullptr;
  if (c->failed != ncclSuccess) return c->failed;
  if (n < 1 || n > kNetMaxRecvs)
    return fail(ncclInvalidArgument, "NET/IB: irecv of %d buffers (1..%d allowed)", n, kNetMaxRecvs);
  for (int i = 0; i < n; i++)
    if (sizes[i] > 0 && (!mhs || !mhs[i] || !mhs[i]->mr))
      return fail(ncclInvalidArgument, "NET/IB: irecv buffer %d (%zu bytes) has no registration", i, sizes[i]);
  ACCL_CHECK(pollRecv(c));
  if (c->inflight >= kMaxInflight) return ncclSuccess;
  uint64_t slotNum = c->fifoTail;
  uint64_t slotIdx = slotNum % kFifoDepth;
  IbRecvSlot& s = c->slots[slotIdx];
  if (s.busy) return ncclSuccess;
  // One receive per QP takes that QP's write-with-immediate for this slot.
  for (ibv_qp* qp : c->q.qps) {
    ibv_recv_wr wr{};
    wr.wr_id = wrId(kKindRecv, slotNum);
    wr.num_sge = 0;
    ibv_recv_wr* bad = nullptr;
    int rc = ibv_post_recv(qp, &wr, &bad);
    if (rc != 0) {
      c->failed = ncclSystemError;
      return fail(ncclSystemError, "NET/IB: ibv_post_recv on QP %u (connection to %s) failed: %s", qp->qp_num,
                  c->peer.c_str(), strerror(rc));
    }
  }
  auto* req = new IbRequest();
  req->recvComm = c;
  req->slot = slotNum;
  req->n = n;
  s.busy = true;
  s.n = n;
  s.req = req;
  s.pendingCompletions = static_cast<int>(c->q.qps.size());
  s.immSize = 0;
  c->inflight++;
  c->fifoTail++;
  IbCts* stage = &c->ctsStage[slotIdx * kNetMaxRecvs];
  for (int i = 0; i < n; i++) {
    stage[i].addr = reinterpret_cast<uint64_t>(data[i]);
    stage[i].size = sizes[i];
    stage[i].rkey = sizes[i] > 0 ? mhs[i]->mr->rkey : 0;
    stage[i].nreqs = static_cast<uint32_t>(n);
    stage[i].tag = tags[i];
    stage[i].idx = slotNum + 1;
  }
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uint64_t>(stage);
  sge.length = static_cast<uint32_t>(n * sizeof(IbCts));
  sge.lkey = c->ctsMr->lkey;
  ibv_send_wr wr{};
  wr.wr_id = wrId(kKindCts, slotNum);
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = c->remoteFifoAddr + slotIdx * kNetMaxRecvs * sizeof(IbCts);
  wr.wr.rdma.rkey = c->remoteFifoRkey;
  *request = req;
  return postSend(c->ibv, c->q.dev, c->peer, c->q.qps[0], &wr, &c->failed);
}

ncclResult_t ibTest(IbRequest* req, int* done, size_t* sizes) {
  *done = 0;
  if (!req->done) {
    if (req->isSend) {
      IbSendComm* c = req->sendComm;
      if (c->failed != ncclSuccess) return c->failed;
      ACCL_CHECK(pollSend(c));
    } else {
      IbRecvComm* c = req->recvComm;
      if (c->failed != ncclSuccess) return c->failed;
      ACCL_CHECK(pollRecv(c));
    }
    if (!req->done) return ncclSuccess;
  }
  *done = 1;
  if (sizes) {
    if (req->isSend)
      sizes[0] = req->size;
    else
      for (int i = 0; i < req->n; i++) sizes[i] = req->sizes[i];
  }
  delete req;
  return ncclSuccess;
}

}  // namespace accl::ib
#endif  // __has_include(<infiniband/verbs.h>)
