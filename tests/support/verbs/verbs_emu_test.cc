// Tests of the userspace verbs emulator itself (libaccl-verbs-emu.so, linked directly) over
// loopback: devices and GIDs, the RC state machine, RDMA write / write-with-imm / send between two
// QPs of one process and of two forked processes, rkey checks, retry exceeded, injected faults.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "support/scoped_env.h"
#include "verbs_emu_control.h"

#undef ibv_query_port
#undef ibv_reg_mr

// The exported symbol, not the header's inline wrapper (which needs a provider's verbs_context).
static int queryPort(ibv_context* ctx, uint8_t port, ibv_port_attr* attr) {
  return ibv_query_port(ctx, port, reinterpret_cast<_compat_ibv_port_attr*>(attr));
}

namespace {

using accl::test::ScopedEnvVar;
using Clock = std::chrono::steady_clock;

constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

struct Endpoint {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  std::vector<char> buf;
  ibv_gid gid{};

  explicit Endpoint(size_t bytes = 1 << 20, int devIndex = 0) : buf(bytes, 0) {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    EXPECT_GT(n, devIndex);
    ctx = ibv_open_device(list[devIndex]);
    ibv_free_device_list(list);
    pd = ibv_alloc_pd(ctx);
    cq = ibv_create_cq(ctx, 1024, nullptr, nullptr, 0);
    ibv_qp_init_attr init{};
    init.send_cq = cq;
    init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = 64;
    init.cap.max_recv_wr = 64;
    init.cap.max_send_sge = 2;
    init.cap.max_recv_sge = 2;
    qp = ibv_create_qp(pd, &init);
    mr = ibv_reg_mr(pd, buf.data(), buf.size(), kAccess);
    EXPECT_EQ(ibv_query_gid(ctx, 1, 1, &gid), 0);
  }
  ~Endpoint() {
    if (mr) ibv_dereg_mr(mr);
    if (qp) ibv_destroy_qp(qp);
    if (cq) ibv_destroy_cq(cq);
    if (pd) ibv_dealloc_pd(pd);
    if (ctx) ibv_close_device(ctx);
  }
};

int toInit(ibv_qp* qp) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = kAccess;
  return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int toRtr(ibv_qp* qp, uint32_t destQpn, const ibv_gid& dgid) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_4096;
  a.dest_qp_num = destQpn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = dgid;
  a.ah_attr.grh.sgid_index = 1;
  a.ah_attr.grh.hop_limit = 255;
  a.ah_attr.port_num = 1;
  return ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

int toRts(ibv_qp* qp) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  return ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_MAX_QP_RD_ATOMIC);
}

void connectQp(Endpoint& e, uint32_t peerQpn, const ibv_gid& peerGid) {
  ASSERT_EQ(toInit(e.qp), 0);
  ASSERT_EQ(toRtr(e.qp, peerQpn, peerGid), 0);
  ASSERT_EQ(toRts(e.qp), 0);
}

void connectPair(Endpoint& a, Endpoint& b) {
  connectQp(a, b.qp->qp_num, b.gid);
  connectQp(b, a.qp->qp_num, a.gid);
}

// Polls until one completion arrives or the timeout passes (returns false then).
bool pollOne(ibv_cq* cq, ibv_wc* wc, int timeoutMs = 10000) {
  auto end = Clock::now() + std::chrono::milliseconds(timeoutMs);
  while (Clock::now() < end) {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n == 1) return true;
    if (n < 0) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return false;
}

int postWrite(Endpoint& from, size_t off, size_t len, uint64_t raddr, uint32_t rkey, ibv_wr_opcode op,
              uint32_t imm, uint64_t wrId, bool signaled = true) {
  ibv_sge sge{reinterpret_cast<uint64_t>(from.buf.data() + off), static_cast<uint32_t>(len), from.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = wrId;
  wr.sg_list = &sge;
  wr.num_sge = len ? 1 : 0;
  wr.opcode = op;
  wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
  wr.imm_data = htonl(imm);
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(from.qp, &wr, &bad);
}

int postRecv(Endpoint& e, uint64_t wrId, size_t off = 0, size_t len = 0) {
  ibv_sge sge{reinterpret_cast<uint64_t>(e.buf.data() + off), static_cast<uint32_t>(len), e.mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = wrId;
  wr.sg_list = &sge;
  wr.num_sge = len ? 1 : 0;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(e.qp, &wr, &bad);
}

class VerbsEmu : public ::testing::Test {
 protected:
  ScopedEnvVar ifname_{"ACCL_VERBS_EMU_IFNAME", "lo,lo"};
  ScopedEnvVar retry_{"ACCL_VERBS_EMU_RETRY_MS", "1500"};
  void TearDown() override { accl_verbs_emu_set_fault(""); }
};

TEST_F(VerbsEmu, DevicesPortsAndGids) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_EQ(n, 2);
  EXPECT_STREQ(ibv_get_device_name(list[0]), "emu0");
  EXPECT_STREQ(ibv_get_device_name(list[1]), "emu1");
  ibv_context* ctx = ibv_open_device(list[1]);
  ibv_free_device_list(list);
  ASSERT_NE(ctx, nullptr);
  ibv_device_attr dattr{};
  EXPECT_EQ(ibv_query_device(ctx, &dattr), 0);
  EXPECT_EQ(dattr.phys_port_cnt, 1);
  ibv_port_attr pattr{};
  EXPECT_EQ(queryPort(ctx, 1, &pattr), 0);
  EXPECT_EQ(pattr.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(pattr.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_NE(queryPort(ctx, 2, &pattr), 0);
  ibv_gid gid{};
  ASSERT_EQ(ibv_query_gid(ctx, 1, 1, &gid), 0);
  const uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
  EXPECT_EQ(memcmp(gid.raw, want, 16), 0);
  ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
  EXPECT_EQ(gid.raw[0], 0xfe);
  EXPECT_NE(ibv_query_gid(ctx, 1, 2, &gid), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

TEST_F(VerbsEmu, PortDownIsReported) {
  ScopedEnvVar down("ACCL_VERBS_EMU_PORT_DOWN", "1");
  Endpoint e(4096);
  ibv_port_attr pattr{};
  EXPECT_EQ(queryPort(e.ctx, 1, &pattr), 0);
  EXPECT_EQ(pattr.state, IBV_PORT_DOWN);
}

TEST_F(VerbsEmu, StateMachineRefusesBadTransitions) {
  Endpoint a(4096), b(4096);
  EXPECT_EQ(a.qp->state, IBV_QPS_RESET);
  // RESET -> RTR and RESET -> RTS skip states.
  EXPECT_EQ(toRtr(a.qp, b.qp->qp_num, b.gid), EINVAL);
  EXPECT_EQ(toRts(a.qp), EINVAL);
  // INIT needs the port, pkey and access flags.
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 1;
  EXPECT_EQ(ibv_modify_qp(a.qp, &attr, IBV_QP_STATE | IBV_QP_PORT), EINVAL);
  attr.port_num = 2;
  EXPECT_EQ(ibv_modify_qp(a.qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), EINVAL);
  ASSERT_EQ(toInit(a.qp), 0);
  EXPECT_EQ(a.qp->state, IBV_QPS_INIT);
  // INIT -> RTS skips RTR; RTR without an address vector is refused.
  EXPECT_EQ(toRts(a.qp), EINVAL);
  attr = {};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = IBV_MTU_1024;
  attr.dest_qp_num = b.qp->qp_num;
  EXPECT_EQ(ibv_modify_qp(a.qp, &attr, IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN), EINVAL);
  // Posting a send before RTS is refused.
  EXPECT_EQ(postWrite(a, 0, 8, reinterpret_cast<uint64_t>(b.buf.data()), b.mr->rkey, IBV_WR_RDMA_WRITE, 0, 1),
            EINVAL);
  ASSERT_EQ(toRtr(a.qp, b.qp->qp_num, b.gid), 0);
  // RTS needs the timeout / retry attributes, and retry_cnt must be <= 7.
  attr = {};
  attr.qp_state = IBV_QPS_RTS;
  EXPECT_EQ(ibv_modify_qp(a.qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN), EINVAL);
  attr.retry_cnt = 9;
  EXPECT_EQ(ibv_modify_qp(a.qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                           IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC),
            EINVAL);
  ASSERT_EQ(toRts(a.qp), 0);
  EXPECT_EQ(a.qp->state, IBV_QPS_RTS);
  // Backwards is refused; ERR and RESET are reachable from anywhere.
  EXPECT_EQ(toInit(a.qp), EINVAL);
  attr = {};
  attr.qp_state = IBV_QPS_ERR;
  EXPECT_EQ(ibv_modify_qp(a.qp, &attr, IBV_QP_STATE), 0);
  EXPECT_EQ(a.qp->state, IBV_QPS_ERR);
  EXPECT_EQ(toRts(a.qp), EINVAL);
  attr.qp_state = IBV_QPS_RESET;
  EXPECT_EQ(ibv_modify_qp(a.qp, &attr, IBV_QP_STATE), 0);
  EXPECT_EQ(toInit(a.qp), 0);
  // A QP that is not RC is not supported.
  ibv_qp_init_attr ud{};
  ud.send_cq = a.cq;
  ud.recv_cq = a.cq;
  ud.qp_type = IBV_QPT_UD;
  EXPECT_EQ(ibv_create_qp(a.pd, &ud), nullptr);
}

TEST_F(VerbsEmu, WriteWithImmArrivesWithBytesAndImm) {
  Endpoint a, b(1 << 20, 1);  // two devices of this process (emu0, emu1)
  connectPair(a, b);
  for (size_t i = 0; i < 4099; i++) a.buf[i] = static_cast<char>(i * 7 + 3);
  ASSERT_EQ(postRecv(b, 77), 0);
  uint64_t dst = reinterpret_cast<uint64_t>(b.buf.data() + 100);
  // An unsignaled plain write, then a signaled write-with-imm: one send completion only.
  ASSERT_EQ(postWrite(a, 0, 4000, dst, b.mr->rkey, IBV_WR_RDMA_WRITE, 0, 1, false), 0);
  ASSERT_EQ(postWrite(a, 4000, 99, dst + 4000, b.mr->rkey, IBV_WR_RDMA_WRITE_WITH_IMM, 0xabcd1234, 2), 0);
  ibv_wc wc{};
  ASSERT_TRUE(pollOne(b.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.wr_id, 77u);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(ntohl(wc.imm_data), 0xabcd1234u);
  EXPECT_EQ(wc.byte_len, 99u);
  EXPECT_EQ(wc.qp_num, b.qp->qp_num);
  EXPECT_EQ(memcmp(b.buf.data() + 100, a.buf.data(), 4099), 0);
  EXPECT_EQ(b.buf[99], 0);
  EXPECT_EQ(b.buf[100 + 4099], 0);
  ASSERT_TRUE(pollOne(a.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.wr_id, 2u);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(ibv_poll_cq(a.cq, 1, &wc), 0);  // the unsignaled write made no completion
  // A zero-byte write-with-imm needs no rkey and still consumes a receive.
  ASSERT_EQ(postRecv(b, 78), 0);
  ASSERT_EQ(postWrite(a, 0, 0, 0, 0, IBV_WR_RDMA_WRITE_WITH_IMM, 5, 3), 0);
  ASSERT_TRUE(pollOne(b.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.byte_len, 0u);
  EXPECT_EQ(ntohl(wc.imm_data), 5u);
  ASSERT_TRUE(pollOne(a.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
}

// Strangers connecting to a QP's port (junk, silence) do not disturb the established pair.
TEST_F(VerbsEmu, StrayConnectionsToAQpPortAreIgnored) {
  Endpoint a, b;
  connectPair(a, b);
  uint64_t dst = reinterpret_cast<uint64_t>(b.buf.data());
  ibv_wc wc{};
  ASSERT_EQ(postWrite(a, 0, 64, dst, b.mr->rkey, IBV_WR_RDMA_WRITE, 0, 71), 0);
  ASSERT_TRUE(pollOne(a.cq, &wc));
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(static_cast<uint16_t>(b.qp->qp_num));
  int junk = socket(AF_INET, SOCK_STREAM, 0), silent = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(junk, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  char garbage[256];
  memset(garbage, 0x7e, sizeof(garbage));
  ASSERT_EQ(send(junk, garbage, sizeof(garbage), 0), static_cast<ssize_t>(sizeof(garbage)));
  ASSERT_EQ(connect(silent, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (size_t i = 0; i < 64; i++) a.buf[i] = static_cast<char>(i + 1);
  ASSERT_EQ(postRecv(b, 72), 0);
  ASSERT_EQ(postWrite(a, 0, 64, dst, b.mr->rkey, IBV_WR_RDMA_WRITE_WITH_IMM, 9, 73), 0);
  ASSERT_TRUE(pollOne(a.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  ASSERT_TRUE(pollOne(b.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(memcmp(b.buf.data(), a.buf.data(), 64), 0);
  close(junk);
  close(silent);
}

TEST_F(VerbsEmu, SendLandsInPostedReceiveAfterRnr) {
  Endpoint a, b;
  connectPair(a, b);
  memcpy(a.buf.data(), "hello, verbs", 13);
  // The send goes first: the receiver has no receive posted, so it waits (RNR) until one is.
  ibv_sge sge{reinterpret_cast<uint64_t>(a.buf.data()), 13, a.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 9;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a.qp, &wr, &bad), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ibv_wc wc{};
  EXPECT_EQ(ibv_poll_cq(a.cq, 1, &wc), 0);
  ASSERT_EQ(postRecv(b, 5, 512, 64), 0);
  ASSERT_TRUE(pollOne(b.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV);
  EXPECT_EQ(wc.byte_len, 13u);
  EXPECT_STREQ(b.buf.data() + 512, "hello, verbs");
  ASSERT_TRUE(pollOne(a.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_SEND);
}

TEST_F(VerbsEmu, RkeyMismatchGivesRemoteAccessErrorThenFlush) {
  Endpoint a, b;
  connectPair(a, b);
  uint64_t dst = reinterpret_cast<uint64_t>(b.buf.data());
  ASSERT_EQ(postWrite(a, 0, 64, dst, b.mr->rkey + 1, IBV_WR_RDMA_WRITE, 0, 11), 0);
  ibv_wc wc{};
  ASSERT_TRUE(pollOne(a.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(wc.wr_id, 11u);
  EXPECT_EQ(a.qp->state, IBV_QPS_ERR);
  // Out of range with the right key is an access error too (on a fresh pair).
  Endpoint c, d;
  connectPair(c, d);
  ASSERT_EQ(postWrite(c, 0, 64, reinterpret_cast<uint64_t>(d.buf.data() + d.buf.size() - 32), d.mr->rkey,
                      IBV_WR_RDMA_WRITE, 0, 12),
            0);
  ASSERT_TRUE(pollOne(c.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
  // Work posted to a QP in error is flushed, signaled or not.
  ASSERT_EQ(postWrite(a, 0, 8, dst, b.mr->rkey, IBV_WR_RDMA_WRITE, 0, 13, false), 0);
  ASSERT_TRUE(pollOne(a.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(wc.wr_id, 13u);
  // A bad local key is a local protection error.
  Endpoint e, f;
  connectPair(e, f);
  ibv_sge sge{reinterpret_cast<uint64_t>(e.buf.data()), 8, e.mr->lkey + 3};
  ibv_send_wr wr{};
  wr.wr_id = 14;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(f.buf.data());
  wr.wr.rdma.rkey = f.mr->rkey;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(e.qp, &wr, &bad), 0);
  ASSERT_TRUE(pollOne(e.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_LOC_PROT_ERR);
}

TEST_F(VerbsEmu, UnreachablePeerGivesRetryExceeded) {
  ScopedEnvVar retry("ACCL_VERBS_EMU_RETRY_MS", "400");
  Endpoint a;
  uint32_t deadQpn;
  ibv_gid deadGid;
  {
    Endpoint gone(4096);
    deadQpn = gone.qp->qp_num;
    deadGid = gone.gid;
  }  // its listener is closed: nobody answers at that (GID, QPN)
  connectQp(a, deadQpn, deadGid);
  auto start = Clock::now();
  ASSERT_EQ(postWrite(a, 0, 64, 0x1000, 1234, IBV_WR_RDMA_WRITE, 0, 21), 0);
  ASSERT_EQ(postWrite(a, 0, 64, 0x1000, 1234, IBV_WR_RDMA_WRITE, 0, 22, false), 0);
  ibv_wc wc{};
  ASSERT_TRUE(pollOne(a.cq, &wc, 10000));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  EXPECT_EQ(wc.status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(wc.wr_id, 21u);
  EXPECT_GE(ms, 350);
  EXPECT_LT(ms, 5000);
  ASSERT_TRUE(pollOne(a.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(wc.wr_id, 22u);
}

TEST_F(VerbsEmu, FaultQpErrorAfterN) {
  Endpoint a, b;
  connectPair(a, b);
  ASSERT_EQ(accl_verbs_emu_set_fault("qp_error_after:1"), 0);
  uint64_t dst = reinterpret_cast<uint64_t>(b.buf.data());
  ASSERT_EQ(postWrite(a, 0, 64, dst, b.mr->rkey, IBV_WR_RDMA_WRITE, 0, 31), 0);
  ibv_wc wc{};
  ASSERT_TRUE(pollOne(a.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  ASSERT_EQ(postWrite(a, 0, 64, dst, b.mr->rkey, IBV_WR_RDMA_WRITE, 0, 32, false), 0);
  ASSERT_TRUE(pollOne(a.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(wc.wr_id, 32u);
  EXPECT_EQ(a.qp->state, IBV_QPS_ERR);
  EXPECT_EQ(accl_verbs_emu_set_fault("no_such_fault:1"), -1);
}

TEST_F(VerbsEmu, FaultRkeyMismatchDropAndDelay) {
  Endpoint a, b;
  connectPair(a, b);
  uint64_t dst = reinterpret_cast<uint64_t>(b.buf.data());
  ibv_wc wc{};
  // drop_cq:0 loses the next completion; the one after arrives.
  ASSERT_EQ(accl_verbs_emu_set_fault("drop_cq:0"), 0);
  ASSERT_EQ(postWrite(a, 0, 64, dst, b.mr->rkey, IBV_WR_RDMA_WRITE, 0, 41), 0);
  ASSERT_EQ(postWrite(a, 0, 64, dst, b.mr->rkey, IBV_WR_RDMA_WRITE, 0, 42), 0);
  ASSERT_TRUE(pollOne(a.cq, &wc));
  EXPECT_EQ(wc.wr_id, 42u);
  // delay_cq:300: a completion is not visible for 300 ms.
  ASSERT_EQ(accl_verbs_emu_set_fault("delay_cq:300"), 0);
  auto start = Clock::now();
  ASSERT_EQ(postWrite(a, 0, 64, dst, b.mr->rkey, IBV_WR_RDMA_WRITE, 0, 43), 0);
  ASSERT_TRUE(pollOne(a.cq, &wc));
  EXPECT_EQ(wc.wr_id, 43u);
  EXPECT_GE(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count(), 290);
  // rkey_mismatch:0: the next data write carries a wrong key.
  ASSERT_EQ(accl_verbs_emu_set_fault("rkey_mismatch:0"), 0);
  ASSERT_EQ(postWrite(a, 0, 64, dst, b.mr->rkey, IBV_WR_RDMA_WRITE, 0, 44), 0);
  ASSERT_TRUE(pollOne(a.cq, &wc));
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(wc.wr_id, 44u);
}

// A fault spec written into ACCL_VERBS_EMU_FAULT_FILE reaches a running process.
TEST_F(VerbsEmu, FaultFileIsPickedUpWhileRunning) {
  char path[] = "/tmp/accl-verbs-emu-fault-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  ScopedEnvVar file("ACCL_VERBS_EMU_FAULT_FILE", path);
  {
    Endpoint a, b;
    connectPair(a, b);
    uint64_t dst = reinterpret_cast<uint64_t>(b.buf.data());
    ibv_wc wc{};
    ASSERT_EQ(postWrite(a, 0, 64, dst, b.mr->rkey, IBV_WR_RDMA_WRITE, 0, 51), 0);
    ASSERT_TRUE(pollOne(a.cq, &wc));
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    FILE* f = fopen(path, "w");
    ASSERT_NE(f, nullptr);
    fputs("qp_error_after:0\n", f);
    fclose(f);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the engine looks every 50 ms
    ASSERT_EQ(postWrite(a, 0, 64, dst, b.mr->rkey, IBV_WR_RDMA_WRITE, 0, 52), 0);
    ASSERT_TRUE(pollOne(a.cq, &wc));
    EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
  }
  unlink(path);
}

// Two forked processes: the child writes 1 MiB + imm into the parent's MR over its own QP.
TEST_F(VerbsEmu, WriteAcrossForkedProcesses) {
  struct Info {
    uint32_t qpn;
    ibv_gid gid;
    uint64_t addr;
    uint32_t rkey;
  };
  int toChild[2], toParent[2];
  ASSERT_EQ(pipe(toChild), 0);
  ASSERT_EQ(pipe(toParent), 0);
  constexpr size_t kBytes = 1 << 20;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(30);
    int rc = 1;
    {
      Endpoint c(kBytes);
      for (size_t i = 0; i < kBytes; i++) c.buf[i] = static_cast<char>((i * 131) >> 3);
      Info mine, peer{};
      memset(&mine, 0, sizeof(mine));
      mine.qpn = c.qp->qp_num;
      mine.gid = c.gid;
      if (write(toParent[1], &mine, sizeof(mine)) == sizeof(mine) && read(toChild[0], &peer, sizeof(peer)) == sizeof(peer)) {
        if (toInit(c.qp) == 0 && toRtr(c.qp, peer.qpn, peer.gid) == 0 && toRts(c.qp) == 0) {
          char go;
          if (read(toChild[0], &go, 1) == 1 &&
              postWrite(c, 0, kBytes, peer.addr, peer.rkey, IBV_WR_RDMA_WRITE_WITH_IMM, 4242, 1) == 0) {
            ibv_wc wc{};
            if (pollOne(c.cq, &wc) && wc.status == IBV_WC_SUCCESS) rc = 0;
          }
        }
      }
    }
    _exit(rc);
  }
  Endpoint p(kBytes);
  Info mine, peer{};
  memset(&mine, 0, sizeof(mine));  // padding too: it goes through a pipe
  mine.qpn = p.qp->qp_num;
  mine.gid = p.gid;
  mine.addr = reinterpret_cast<uint64_t>(p.buf.data());
  mine.rkey = p.mr->rkey;
  ASSERT_EQ(read(toParent[0], &peer, sizeof(peer)), static_cast<ssize_t>(sizeof(peer)));
  ASSERT_EQ(write(toChild[1], &mine, sizeof(mine)), static_cast<ssize_t>(sizeof(mine)));
  connectQp(p, peer.qpn, peer.gid);
  ASSERT_EQ(postRecv(p, 3), 0);
  ASSERT_EQ(write(toChild[1], "g", 1), 1);
  ibv_wc wc{};
  ASSERT_TRUE(pollOne(p.cq, &wc, 20000));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(ntohl(wc.imm_data), 4242u);
  EXPECT_EQ(wc.byte_len, kBytes);
  size_t bad = 0;
  for (size_t i = 0; i < kBytes; i++) bad += p.buf[i] != static_cast<char>((i * 131) >> 3);
  EXPECT_EQ(bad, 0u);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  for (int fd : {toChild[0], toChild[1], toParent[0], toParent[1]}) close(fd);
}

// A peer that stops answering (SIGSTOP: the TCP connection stays up, nothing is acknowledged, as
// with a pulled cable) and a peer that dies (SIGKILL) both end in IBV_WC_RETRY_EXC_ERR within the
// retry budget.
TEST_F(VerbsEmu, FrozenOrKilledPeerGivesRetryExceeded) {
  ScopedEnvVar retry("ACCL_VERBS_EMU_RETRY_MS", "600");
  for (int sig : {SIGSTOP, SIGKILL}) {
    SCOPED_TRACE(sig == SIGSTOP ? "SIGSTOP" : "SIGKILL");
    struct Info {
      uint32_t qpn;
      ibv_gid gid;
      uint64_t addr;
      uint32_t rkey;
    };
    int toChild[2], toParent[2];
    ASSERT_EQ(pipe(toChild), 0);
    ASSERT_EQ(pipe(toParent), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(30);
      Endpoint c(1 << 16);
      Info mine, peer{};
      memset(&mine, 0, sizeof(mine));
      mine.qpn = c.qp->qp_num;
      mine.gid = c.gid;
      mine.addr = reinterpret_cast<uint64_t>(c.buf.data());
      mine.rkey = c.mr->rkey;
      if (read(toChild[0], &peer, sizeof(peer)) != sizeof(peer)) _exit(1);
      if (toInit(c.qp) || toRtr(c.qp, peer.qpn, peer.gid) || toRts(c.qp)) _exit(1);
      if (write(toParent[1], &mine, sizeof(mine)) != sizeof(mine)) _exit(1);
      pause();  // until killed
      _exit(0);
    }
    Endpoint p(1 << 16);
    Info mine, peer{};
    memset(&mine, 0, sizeof(mine));
    mine.qpn = p.qp->qp_num;
    mine.gid = p.gid;
    ASSERT_EQ(write(toChild[1], &mine, sizeof(mine)), static_cast<ssize_t>(sizeof(mine)));
    ASSERT_EQ(read(toParent[0], &peer, sizeof(peer)), static_cast<ssize_t>(sizeof(peer)));
    connectQp(p, peer.qpn, peer.gid);
    ibv_wc wc{};
    ASSERT_EQ(postWrite(p, 0, 4096, peer.addr, peer.rkey, IBV_WR_RDMA_WRITE, 0, 61), 0);
    ASSERT_TRUE(pollOne(p.cq, &wc));
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_EQ(kill(pid, sig), 0);
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, WUNTRACED), pid);  // stopped / dead for sure before the next write
    auto start = Clock::now();
    ASSERT_EQ(postWrite(p, 0, 4096, peer.addr, peer.rkey, IBV_WR_RDMA_WRITE, 0, 62), 0);
    ASSERT_TRUE(pollOne(p.cq, &wc, 10000));
    EXPECT_EQ(wc.status, IBV_WC_RETRY_EXC_ERR);
    EXPECT_EQ(wc.wr_id, 62u);
    EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count(), 5000);
    if (sig == SIGSTOP) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    for (int fd : {toChild[0], toChild[1], toParent[0], toParent[1]}) close(fd);
  }
}

}  // namespace
