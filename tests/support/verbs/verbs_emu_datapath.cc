// The verbs emulator's data path: ibv_post_send / ibv_post_recv / ibv_poll_cq (reached through
// the context's ops table, as the real inline wrappers call them), the responder's handling of
// inbound writes and sends (rkey checks, placement, receive completions, acknowledgements), the
// requester's handling of acknowledgements, and the error paths (flush, retry exceeded).
#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "verbs_emu.h"

namespace verbs_emu {

namespace {

ibv_wc makeWc(uint64_t wrId, ibv_wc_status status, ibv_wc_opcode opcode, uint32_t qpn) {
  ibv_wc wc;
  memset(&wc, 0, sizeof(wc));
  wc.wr_id = wrId;
  wc.status = status;
  wc.opcode = opcode;
  wc.qp_num = qpn;
  return wc;
}

ibv_wc_opcode wcOpcodeFor(ibv_wr_opcode op) {
  switch (op) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM: return IBV_WC_SEND;
    default: return IBV_WC_RDMA_WRITE;
  }
}

void sendAck(Qp* q, uint64_t seq, uint16_t type, uint16_t status) {
  if (q->in.fd < 0) return;
  WireHdr h{};
  h.magic = kWireMagic;
  h.type = type;
  h.status = status;
  h.seq = seq;
  queueFrame(&q->in, h, nullptr, 0);
  if (!flushOut(&q->in)) q->in.close();
}

void copyFn(void* dst, const void* src, size_t len) { forwardCopy(dst, src, len); }

}  // namespace

void forwardCopy(void* dst, const void* src, size_t len) {
  auto* d = static_cast<char*>(dst);
  auto* s = static_cast<const char*>(src);
  // Large payloads: everything but the last 4 KiB at once, then the tail in ascending 64-byte
  // steps (with compiler barriers; x86 makes stores visible in program order).
  size_t bulk = len > 4096 ? len - 4096 : 0;
  if (bulk) memcpy(d, s, bulk);
  for (size_t off = bulk; off < len; off += 64) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    size_t n = len - off < 64 ? len - off : 64;
    memcpy(d + off, s + off, n);
  }
  std::atomic_thread_fence(std::memory_order_release);
}

void pushCqe(Cq* cq, const ibv_wc& wc) {
  if (faultDropCqe()) {
    fprintf(stderr, "verbs-emu: fault: dropped a completion (wr_id %llu, status %d)\n",
            static_cast<unsigned long long>(wc.wr_id), static_cast<int>(wc.status));
    return;
  }
  if (static_cast<int>(cq->entries.size()) >= cq->depth && !cq->overflowWarned) {
    cq->overflowWarned = true;
    fprintf(stderr, "verbs-emu: CQ overflow (depth %d)\n", cq->depth);
  }
  int delayMs = faultDelayCqMs();
  cq->entries.push_back(Cqe{wc, nowNs() + int64_t(delayMs) * 1000000});
}

int64_t retryBudgetNs(const Qp* qp) {
  if (const char* v = getenv("ACCL_VERBS_EMU_RETRY_MS")) {
    long ms = atol(v);
    if (ms > 0) return int64_t(ms) * 1000000;
  }
  double scale = 0.25;
  if (const char* v = getenv("ACCL_VERBS_EMU_TIME_SCALE")) scale = atof(v);
  double ns = 4096.0 * std::ldexp(1.0, qp->timeout) * (qp->retryCnt + 1) * scale;
  if (ns < 1e9) ns = 1e9;
  return static_cast<int64_t>(ns);
}

void moveToError(Qp* q) {
  if (q->state == IBV_QPS_ERR) return;
  q->state = IBV_QPS_ERR;
  q->qp.state = IBV_QPS_ERR;
  for (const PendingSend& p : q->unacked)
    pushCqe(q->sendCq, makeWc(p.wrId, IBV_WC_WR_FLUSH_ERR, p.opcode, q->qp.qp_num));
  q->unacked.clear();
  for (const PostedRecv& r : q->recvs)
    pushCqe(q->recvCq, makeWc(r.wrId, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, q->qp.qp_num));
  q->recvs.clear();
  q->inQueue.clear();
  q->out.close();
  q->in.close();
  q->pendingIn.close();
  q->retryDeadlineNs = 0;
}

void failSends(Qp* q, ibv_wc_status status) {
  if (!q->unacked.empty()) {
    PendingSend p = q->unacked.front();
    q->unacked.pop_front();
    pushCqe(q->sendCq, makeWc(p.wrId, status, p.opcode, q->qp.qp_num));
  }
  moveToError(q);
}

void queueFrame(Conn* c, const WireHdr& h, const void* payload, size_t len) {
  std::vector<char> f(sizeof(WireHdr) + len);
  memcpy(f.data(), &h, sizeof(h));
  if (len) memcpy(f.data() + sizeof(h), payload, len);
  c->out.push_back(std::move(f));
}

bool flushOut(Conn* c) {
  if (c->fd < 0 || c->connecting) return true;
  while (!c->out.empty()) {
    std::vector<char>& f = c->out.front();
    ssize_t n = send(c->fd, f.data() + c->outOff, f.size() - c->outOff, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      if (errno == EINTR) continue;
      return false;
    }
    c->outOff += static_cast<size_t>(n);
    if (c->outOff == f.size()) {
      c->out.pop_front();
      c->outOff = 0;
    }
  }
  return true;
}

void handleAck(Qp* q, const WireHdr& h) {
  if (q->state != IBV_QPS_RTS && q->state != IBV_QPS_RTR) return;
  if (q->unacked.empty()) return;
  q->retryDeadlineNs = nowNs() + retryBudgetNs(q);  // the peer is alive: restart the clock
  if (h.type == kWireRnr) return;
  PendingSend p = q->unacked.front();
  if (p.seq != h.seq) return;  // stale
  q->unacked.pop_front();
  if (q->unacked.empty()) q->retryDeadlineNs = 0;
  if (h.status != kAckOk) {
    ibv_wc_status st = h.status == kAckRemAccess ? IBV_WC_REM_ACCESS_ERR
                       : h.status == kAckRemInvReq ? IBV_WC_REM_INV_REQ_ERR
                                                   : IBV_WC_REM_OP_ERR;
    pushCqe(q->sendCq, makeWc(p.wrId, st, p.opcode, q->qp.qp_num));
    moveToError(q);
    return;
  }
  if (p.signaled) {
    ibv_wc wc = makeWc(p.wrId, IBV_WC_SUCCESS, p.opcode, q->qp.qp_num);
    wc.byte_len = p.len;
    pushCqe(q->sendCq, wc);
  }
}

void processInbound(Qp* q) {
  int64_t now = nowNs();
  while (!q->inQueue.empty()) {
    if (q->state != IBV_QPS_RTR && q->state != IBV_QPS_RTS) {
      q->inQueue.clear();
      return;
    }
    InFrame& f = q->inQueue.front();
    const WireHdr& h = f.hdr;
    bool needsRecv = h.opcode == IBV_WR_RDMA_WRITE_WITH_IMM || h.opcode == IBV_WR_SEND ||
                     h.opcode == IBV_WR_SEND_WITH_IMM;
    bool isWrite = h.opcode == IBV_WR_RDMA_WRITE || h.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    if (isWrite && h.len > 0) {
      // Check first: a bad rkey is answered at once, without consuming a receive.
      if (!withRemoteMr(h.rkey, q->pd, h.raddr, h.len, IBV_ACCESS_REMOTE_WRITE, nullptr, nullptr) ||
          !(q->accessFlags & IBV_ACCESS_REMOTE_WRITE)) {
        sendAck(q, h.seq, kWireAck, kAckRemAccess);
        q->inQueue.pop_front();
        continue;
      }
    }
    if (needsRecv && q->recvs.empty()) {
      // Receiver not ready: tell the requester (it keeps retrying, rnr_retry 7 = forever).
      if (now - q->lastRnrNs > 100 * 1000000LL) {
        q->lastRnrNs = now;
        sendAck(q, h.seq, kWireRnr, kAckOk);
      }
      return;
    }
    if (isWrite && h.len > 0) {
      if (!withRemoteMr(h.rkey, q->pd, h.raddr, h.len, IBV_ACCESS_REMOTE_WRITE, copyFn, f.payload.data())) {
        sendAck(q, h.seq, kWireAck, kAckRemAccess);  // deregistered meanwhile
        q->inQueue.pop_front();
        continue;
      }
    }
    if (needsRecv) {
      PostedRecv r = std::move(q->recvs.front());
      q->recvs.pop_front();
      ibv_wc wc = makeWc(r.wrId, IBV_WC_SUCCESS,
                         h.opcode == IBV_WR_RDMA_WRITE_WITH_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
                         q->qp.qp_num);
      wc.byte_len = static_cast<uint32_t>(h.len);
      wc.src_qp = q->destQpn;
      if (h.opcode != IBV_WR_SEND) {
        wc.wc_flags |= IBV_WC_WITH_IMM;
        wc.imm_data = h.imm;
      }
      uint16_t ack = kAckOk;
      if (h.opcode != IBV_WR_RDMA_WRITE_WITH_IMM) {
        // A send: scatter into the receive's buffers.
        uint64_t room = 0;
        for (const ibv_sge& s : r.sges) room += s.length;
        if (h.len > room) {
          wc.status = IBV_WC_LOC_LEN_ERR;
          ack = kAckRemInvReq;
        } else {
          uint64_t off = 0;
          for (const ibv_sge& s : r.sges) {
            if (off >= h.len) break;
            uint64_t n = std::min<uint64_t>(s.length, h.len - off);
            if (!withLocalMr(s.lkey, q->pd, s.addr, n, IBV_ACCESS_LOCAL_WRITE)) {
              wc.status = IBV_WC_LOC_PROT_ERR;
              ack = kAckRemOp;
              break;
            }
            forwardCopy(reinterpret_cast<void*>(s.addr), f.payload.data() + off, n);
            off += n;
          }
        }
      }
      pushCqe(q->recvCq, wc);
      sendAck(q, h.seq, kWireAck, ack);
      q->inQueue.pop_front();
      if (wc.status != IBV_WC_SUCCESS) {
        moveToError(q);
        return;
      }
      continue;
    }
    sendAck(q, h.seq, kWireAck, kAckOk);
    q->inQueue.pop_front();
  }
}

// --- The context ops table entries (ibv_post_send / ibv_post_recv / ibv_poll_cq) ---

int ctxOps_postSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  auto* q = reinterpret_cast<Qp*>(qp);
  std::lock_guard<std::mutex> lock(q->ctx->mu);
  for (; wr; wr = wr->next) {
    if (q->state == IBV_QPS_ERR) {  // accepted and flushed at once
      pushCqe(q->sendCq, makeWc(wr->wr_id, IBV_WC_WR_FLUSH_ERR, wcOpcodeFor(wr->opcode), qp->qp_num));
      continue;
    }
    int err = 0;
    if (q->state != IBV_QPS_RTS) err = EINVAL;
    else if (wr->opcode != IBV_WR_RDMA_WRITE && wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM &&
             wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM)
      err = EINVAL;
    else if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > q->cap.max_send_sge) err = EINVAL;
    else if (q->unacked.size() >= q->cap.max_send_wr) err = ENOMEM;
    if (err) {
      if (bad) *bad = wr;
      return err;
    }
    bool signaled = q->sigAll || (wr->send_flags & IBV_SEND_SIGNALED);
    ibv_wc_opcode wcOp = wcOpcodeFor(wr->opcode);
    uint64_t len = 0;
    for (int i = 0; i < wr->num_sge; i++) len += wr->sg_list[i].length;
    if (len > (uint64_t(1) << 31)) {
      if (bad) *bad = wr;
      return EINVAL;
    }
    // Local keys: every gathered byte must be in an MR of this PD (inline data is copied as is).
    bool inlined = (wr->send_flags & IBV_SEND_INLINE) != 0;
    bool localOk = true;
    for (int i = 0; i < wr->num_sge && !inlined; i++) {
      const ibv_sge& s = wr->sg_list[i];
      if (s.length && !withLocalMr(s.lkey, q->pd, s.addr, s.length, 0)) localOk = false;
    }
    if (!localOk) {
      pushCqe(q->sendCq, makeWc(wr->wr_id, IBV_WC_LOC_PROT_ERR, wcOp, qp->qp_num));
      moveToError(q);
      continue;
    }
    bool isWrite = wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    FaultDecision fault = faultOnPostSend(isWrite && len > 0);
    if (fault.qpError) {
      fprintf(stderr, "verbs-emu: fault: QP %u forced to the error state\n", qp->qp_num);
      q->unacked.push_back(PendingSend{0, wr->wr_id, wcOp, signaled, static_cast<uint32_t>(len)});
      moveToError(q);
      continue;
    }
    WireHdr h{};
    h.magic = kWireMagic;
    h.type = kWireData;
    h.opcode = wr->opcode;
    h.rkey = isWrite ? wr->wr.rdma.rkey : 0;
    if (fault.rkeyMismatch) {
      fprintf(stderr, "verbs-emu: fault: RDMA write on QP %u sent with a wrong rkey\n", qp->qp_num);
      h.rkey ^= 0x40000001u;
    }
    h.raddr = isWrite ? wr->wr.rdma.remote_addr : 0;
    h.imm = wr->imm_data;
    h.seq = q->nextSeq++;
    h.len = len;
    std::vector<char> f(sizeof(WireHdr) + len);
    memcpy(f.data(), &h, sizeof(h));
    uint64_t off = sizeof(h);
    for (int i = 0; i < wr->num_sge; i++) {
      const ibv_sge& s = wr->sg_list[i];
      if (s.length) memcpy(f.data() + off, reinterpret_cast<const void*>(s.addr), s.length);
      off += s.length;
    }
    q->out.out.push_back(std::move(f));
    if (q->unacked.empty()) q->retryDeadlineNs = nowNs() + retryBudgetNs(q);
    q->unacked.push_back(PendingSend{h.seq, wr->wr_id, wcOp, signaled, static_cast<uint32_t>(len)});
  }
  if (q->state == IBV_QPS_RTS && !q->outBroken) {
    if (q->out.fd < 0) startConnect(q);
    if (!flushOut(&q->out)) {
      q->out.close();
      q->outBroken = true;  // the retry clock decides
    }
    if (q->out.hasOutput() || q->out.connecting) q->ctx->wake();
  }
  return 0;
}

int ctxOps_postRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  auto* q = reinterpret_cast<Qp*>(qp);
  std::lock_guard<std::mutex> lock(q->ctx->mu);
  for (; wr; wr = wr->next) {
    if (q->state == IBV_QPS_ERR) {
      pushCqe(q->recvCq, makeWc(wr->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, qp->qp_num));
      continue;
    }
    if (q->state == IBV_QPS_RESET || wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > q->cap.max_recv_sge ||
        q->recvs.size() >= q->cap.max_recv_wr) {
      if (bad) *bad = wr;
      return q->recvs.size() >= q->cap.max_recv_wr ? ENOMEM : EINVAL;
    }
    PostedRecv r;
    r.wrId = wr->wr_id;
    r.sges.assign(wr->sg_list, wr->sg_list + wr->num_sge);
    q->recvs.push_back(std::move(r));
  }
  processInbound(q);
  return 0;
}

int ctxOps_pollCq(ibv_cq* cq, int n, ibv_wc* wc) {
  auto* c = reinterpret_cast<Cq*>(cq);
  std::lock_guard<std::mutex> lock(c->ctx->mu);
  int got = 0;
  int64_t now = nowNs();
  while (got < n && !c->entries.empty() && c->entries.front().readyNs <= now) {
    wc[got++] = c->entries.front().wc;
    c->entries.pop_front();
  }
  return got;
}

}  // namespace verbs_emu
