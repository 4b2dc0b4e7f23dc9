// The verbs emulator's exported libibverbs entry points for objects: the device list (one device
// per ACCL_VERBS_EMU_IFNAME interface), contexts (each with its engine thread), PDs, MRs (lkey /
// rkey table), CQs and RC QPs with the RESET -> INIT -> RTR -> RTS -> ERR state machine and its
// required attributes. The data path (post / poll) is verbs_emu_datapath.cc.
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "verbs_emu.h"

#undef ibv_reg_mr
#undef ibv_query_port
#undef ibv_get_device_list
#undef ibv_reg_mr_iova

#define EMU_EXPORT extern "C" __attribute__((visibility("default")))

namespace verbs_emu {

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Conn::close() {
  if (fd >= 0) ::close(fd);
  fd = -1;
  connecting = false;
  out.clear();
  outOff = 0;
  hdrGot = 0;
  payload.clear();
  payloadGot = 0;
}

Qp::~Qp() {
  out.close();
  in.close();
  pendingIn.close();
  if (listenFd >= 0) ::close(listenFd);
}

void Context::wake() {
  uint64_t one = 1;
  if (write(wakeFd, &one, sizeof(one)) < 0) {
  }
}

int ctxOps_pollCq(ibv_cq* cq, int n, ibv_wc* wc);
int ctxOps_postSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
int ctxOps_postRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);

namespace {

std::mutex gDevMu;
// "emu<i>@ifname" -> device, kept for the process as libibverbs keeps its devices: the map is never
// destroyed (a static map's destructor at exit would orphan the devices, and LeakSanitizer would
// report them; threads of the emulator may still use them then).
std::map<std::string, Device*>& gDevices = *new std::map<std::string, Device*>();

std::mutex gMrMu;
std::map<uint32_t, Mr*> gByRkey;
std::map<uint32_t, Mr*> gByLkey;
uint32_t gNextKey = 0;

uint32_t newKey() {
  if (gNextKey == 0) gNextKey = (static_cast<uint32_t>(getpid()) * 2654435761u) & 0x7fffff00u;
  gNextKey += 0x101;
  return gNextKey;
}

bool findIpv4(const std::string& ifname, in_addr* ip) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP)) continue;
    if (ifname != a->ifa_name) continue;
    *ip = reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr;
    found = true;
    break;
  }
  freeifaddrs(list);
  return found;
}

std::string defaultIfname() {
  ifaddrs* list = nullptr;
  std::string pick = "lo";
  if (getifaddrs(&list) != 0) return pick;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP)) continue;
    if (a->ifa_flags & IFF_LOOPBACK) continue;
    pick = a->ifa_name;
    break;
  }
  freeifaddrs(list);
  return pick;
}

bool portDown() {
  const char* v = getenv("ACCL_VERBS_EMU_PORT_DOWN");
  return v && atoi(v) == 1;
}

Context* ctxOf(ibv_context* c) { return reinterpret_cast<Context*>(c); }

}  // namespace

bool withRemoteMr(uint32_t rkey, Pd* pd, uint64_t addr, uint64_t len, int needAccess,
                  void (*fn)(void*, const void*, size_t), const void* src) {
  std::lock_guard<std::mutex> lock(gMrMu);
  auto it = gByRkey.find(rkey);
  if (it == gByRkey.end()) return false;
  Mr* mr = it->second;
  uint64_t base = reinterpret_cast<uint64_t>(mr->mr.addr);
  if (mr->pd != pd || (mr->access & needAccess) != needAccess) return false;
  if (addr < base || addr + len > base + mr->mr.length || addr + len < addr) return false;
  if (fn && len) fn(reinterpret_cast<void*>(addr), src, len);
  return true;
}

bool withLocalMr(uint32_t lkey, Pd* pd, uint64_t addr, uint64_t len, int needAccess) {
  std::lock_guard<std::mutex> lock(gMrMu);
  auto it = gByLkey.find(lkey);
  if (it == gByLkey.end()) return false;
  Mr* mr = it->second;
  uint64_t base = reinterpret_cast<uint64_t>(mr->mr.addr);
  if (mr->pd != pd || (mr->access & needAccess) != needAccess) return false;
  return addr >= base && addr + len <= base + mr->mr.length && addr + len >= addr;
}

}  // namespace verbs_emu

using namespace verbs_emu;

// --- Devices ---

EMU_EXPORT ibv_device** ibv_get_device_list(int* num) {
  std::string spec = getenv("ACCL_VERBS_EMU_IFNAME") ? getenv("ACCL_VERBS_EMU_IFNAME") : defaultIfname();
  std::vector<Device*> devs;
  std::lock_guard<std::mutex> lock(gDevMu);
  size_t pos = 0;
  int index = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    std::string ifname = spec.substr(pos, comma - pos);
    pos = comma + 1;
    if (ifname.empty()) continue;
    in_addr ip;
    if (!findIpv4(ifname, &ip)) {
      fprintf(stderr, "verbs-emu: interface %s has no IPv4 address or is down; no device for it\n", ifname.c_str());
      continue;
    }
    std::string key = "emu" + std::to_string(index) + "@" + ifname + "@" + std::to_string(ip.s_addr);
    Device*& d = gDevices[key];
    if (!d) {
      d = new Device();
      memset(&d->dev, 0, sizeof(d->dev));
      d->dev.node_type = IBV_NODE_CA;
      d->dev.transport_type = IBV_TRANSPORT_IB;
      snprintf(d->dev.name, sizeof(d->dev.name), "emu%d", index);
      snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%d", index);
      snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/uverbs%d", index);
      snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/emu%d", index);
      d->ifname = ifname;
      d->ip = ip;
      d->index = index;
    }
    devs.push_back(d);
    index++;
  }
  auto** list = static_cast<ibv_device**>(calloc(devs.size() + 1, sizeof(ibv_device*)));
  if (!list) {
    errno = ENOMEM;
    return nullptr;
  }
  for (size_t i = 0; i < devs.size(); i++) list[i] = &devs[i]->dev;
  if (num) *num = static_cast<int>(devs.size());
  return list;
}

EMU_EXPORT void ibv_free_device_list(ibv_device** list) { free(list); }

EMU_EXPORT const char* ibv_get_device_name(ibv_device* dev) { return dev ? dev->name : nullptr; }

EMU_EXPORT __be64 ibv_get_device_guid(ibv_device* dev) {
  auto* d = reinterpret_cast<Device*>(dev);
  return htobe64((0x02c9ull << 48) | (uint64_t(d->index) << 32) | ntohl(d->ip.s_addr));
}

EMU_EXPORT ibv_context* ibv_open_device(ibv_device* dev) {
  auto* c = new Context();
  memset(&c->ctx, 0, sizeof(c->ctx));
  c->ctx.device = dev;
  c->ctx.cmd_fd = -1;
  c->ctx.async_fd = -1;
  c->ctx.num_comp_vectors = 1;
  pthread_mutex_init(&c->ctx.mutex, nullptr);
  c->ctx.ops.poll_cq = ctxOps_pollCq;
  c->ctx.ops.post_send = ctxOps_postSend;
  c->ctx.ops.post_recv = ctxOps_postRecv;
  c->ctx.ops.req_notify_cq = [](ibv_cq*, int) { return 0; };
  c->dev = reinterpret_cast<Device*>(dev);
  c->wakeFd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (c->wakeFd < 0) {
    delete c;
    return nullptr;
  }
  c->engine = std::thread(engineMain, c);
  return &c->ctx;
}

EMU_EXPORT int ibv_close_device(ibv_context* context) {
  Context* c = ctxOf(context);
  c->stop = true;
  c->wake();
  if (c->engine.joinable()) c->engine.join();
  {
    std::lock_guard<std::mutex> lock(c->mu);
    c->qps.clear();
  }
  close(c->wakeFd);
  delete c;
  return 0;
}

EMU_EXPORT int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  Device* d = ctxOf(context)->dev;
  memset(attr, 0, sizeof(*attr));
  snprintf(attr->fw_ver, sizeof(attr->fw_ver), "accl-verbs-emu 1.0");
  attr->node_guid = ibv_get_device_guid(&d->dev);
  attr->sys_image_guid = attr->node_guid;
  attr->max_mr_size = ~0ull;
  attr->page_size_cap = 4096;
  attr->vendor_id = 0;  // not a real vendor: no vendor quirks apply
  attr->max_qp = 65536;
  attr->max_qp_wr = 8192;
  attr->max_sge = 16;
  attr->max_sge_rd = 16;
  attr->max_cq = 65536;
  attr->max_cqe = 1 << 20;
  attr->max_mr = 1 << 20;
  attr->max_pd = 1 << 16;
  attr->max_qp_rd_atom = 16;
  attr->max_qp_init_rd_atom = 16;
  attr->max_pkeys = 1;
  attr->phys_port_cnt = 1;
  return 0;
}

EMU_EXPORT int ibv_query_port(ibv_context* context, uint8_t port, struct _compat_ibv_port_attr* compat) {
  auto* attr = reinterpret_cast<ibv_port_attr*>(compat);
  if (port != 1) {
    errno = EINVAL;
    return EINVAL;
  }
  memset(attr, 0, sizeof(*attr));
  attr->state = portDown() ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
  attr->max_mtu = IBV_MTU_4096;
  attr->active_mtu = IBV_MTU_4096;
  attr->gid_tbl_len = 2;
  attr->max_msg_sz = 1u << 31;
  attr->pkey_tbl_len = 1;
  attr->lid = 0;
  attr->active_width = 2;   // 4x
  attr->active_speed = 32;  // EDR: 25 Gb/s per lane -> 100 Gb/s
  attr->phys_state = portDown() ? 3 : 5;
  attr->link_layer = IBV_LINK_LAYER_ETHERNET;
  return 0;
}

EMU_EXPORT int ibv_query_gid(ibv_context* context, uint8_t port, int index, ibv_gid* gid) {
  Device* d = ctxOf(context)->dev;
  if (port != 1 || index < 0 || index > 1) {
    errno = EINVAL;
    return -1;
  }
  memset(gid, 0, sizeof(*gid));
  if (index == 0) {  // link-local, as RoCE lists first
    gid->raw[0] = 0xfe;
    gid->raw[1] = 0x80;
    memcpy(&gid->raw[12], &d->ip.s_addr, 4);
  } else {  // IPv4-mapped: ::ffff:a.b.c.d
    gid->raw[10] = 0xff;
    gid->raw[11] = 0xff;
    memcpy(&gid->raw[12], &d->ip.s_addr, 4);
  }
  return 0;
}

// --- PD / MR ---

EMU_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* context) {
  auto* p = new Pd();
  memset(&p->pd, 0, sizeof(p->pd));
  p->pd.context = context;
  p->ctx = ctxOf(context);
  return &p->pd;
}

EMU_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
  {
    std::lock_guard<std::mutex> lock(gMrMu);
    for (auto& [k, mr] : gByRkey)
      if (&mr->pd->pd == pd) return EBUSY;
  }
  delete reinterpret_cast<Pd*>(pd);
  return 0;
}

EMU_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  if (!pd || (!addr && length)) {
    errno = EINVAL;
    return nullptr;
  }
  // Remote write needs local write, as the verbs spec says.
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE)) {
    errno = EINVAL;
    return nullptr;
  }
  auto* m = new Mr();
  memset(&m->mr, 0, sizeof(m->mr));
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = addr;
  m->mr.length = length;
  m->pd = reinterpret_cast<Pd*>(pd);
  m->access = static_cast<int>(access);
  std::lock_guard<std::mutex> lock(gMrMu);
  m->mr.lkey = newKey();
  m->mr.rkey = newKey() ^ 0x00800000u;
  m->mr.handle = m->mr.lkey;
  gByLkey[m->mr.lkey] = m;
  gByRkey[m->mr.rkey] = m;
  return &m->mr;
}

EMU_EXPORT ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<uint64_t>(addr), static_cast<unsigned>(access));
}

// No dma-buf support: the probe NCCL-style code makes (fd = -1) sees EOPNOTSUPP.
EMU_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
  errno = EOPNOTSUPP;
  return nullptr;
}

EMU_EXPORT int ibv_dereg_mr(ibv_mr* mr) {
  auto* m = reinterpret_cast<Mr*>(mr);
  std::lock_guard<std::mutex> lock(gMrMu);
  if (!gByLkey.erase(m->mr.lkey)) return EINVAL;
  gByRkey.erase(m->mr.rkey);
  delete m;
  return 0;
}

// --- CQ ---

EMU_EXPORT ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cqContext, ibv_comp_channel* channel,
                                 int vector) {
  if (cqe <= 0 || cqe > (1 << 20)) {
    errno = EINVAL;
    return nullptr;
  }
  auto* q = new Cq();
  memset(&q->cq, 0, sizeof(q->cq));
  q->cq.context = context;
  q->cq.channel = channel;
  q->cq.cq_context = cqContext;
  q->cq.cqe = cqe;
  pthread_mutex_init(&q->cq.mutex, nullptr);
  pthread_cond_init(&q->cq.cond, nullptr);
  q->ctx = ctxOf(context);
  q->depth = cqe;
  return &q->cq;
}

EMU_EXPORT int ibv_destroy_cq(ibv_cq* cq) {
  auto* q = reinterpret_cast<Cq*>(cq);
  {
    std::lock_guard<std::mutex> lock(q->ctx->mu);
    if (q->users > 0) return EBUSY;
  }
  delete q;
  return 0;
}

// --- QP ---

EMU_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  if (!pd || !init || init->qp_type != IBV_QPT_RC || !init->send_cq || !init->recv_cq || init->srq) {
    errno = init && init->qp_type != IBV_QPT_RC ? EOPNOTSUPP : EINVAL;
    return nullptr;
  }
  if (init->cap.max_send_wr > 8192 || init->cap.max_recv_wr > 8192 || init->cap.max_send_sge > 16 ||
      init->cap.max_recv_sge > 16 || init->cap.max_inline_data > 256) {
    errno = EINVAL;
    return nullptr;
  }
  Context* c = reinterpret_cast<Pd*>(pd)->ctx;
  auto q = std::make_shared<Qp>();
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr = c->dev->ip;
  sa.sin_port = 0;
  socklen_t len = sizeof(sa);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return nullptr;
  }
  q->listenFd = fd;
  memset(&q->qp, 0, sizeof(q->qp));
  q->qp.context = pd->context;
  q->qp.qp_context = init->qp_context;
  q->qp.pd = pd;
  q->qp.send_cq = init->send_cq;
  q->qp.recv_cq = init->recv_cq;
  q->qp.qp_num = ntohs(sa.sin_port);
  q->qp.handle = q->qp.qp_num;
  q->qp.state = IBV_QPS_RESET;
  q->qp.qp_type = IBV_QPT_RC;
  pthread_mutex_init(&q->qp.mutex, nullptr);
  pthread_cond_init(&q->qp.cond, nullptr);
  q->ctx = c;
  q->pd = reinterpret_cast<Pd*>(pd);
  q->sendCq = reinterpret_cast<Cq*>(init->send_cq);
  q->recvCq = reinterpret_cast<Cq*>(init->recv_cq);
  q->cap = init->cap;
  if (q->cap.max_send_sge == 0) q->cap.max_send_sge = 1;
  if (q->cap.max_recv_sge == 0) q->cap.max_recv_sge = 1;
  q->sigAll = init->sq_sig_all != 0;
  std::lock_guard<std::mutex> lock(c->mu);
  q->sendCq->users++;
  q->recvCq->users++;
  c->qps.push_back(q);
  c->wake();
  return &q->qp;
}

namespace {

void setState(Qp* q, ibv_qp_state s) {
  q->state = s;
  q->qp.state = s;
}

bool has(int mask, int need) { return (mask & need) == need; }

}  // namespace

EMU_EXPORT int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  auto* q = reinterpret_cast<Qp*>(qp);
  std::lock_guard<std::mutex> lock(q->ctx->mu);
  if (!(mask & IBV_QP_STATE)) return EINVAL;
  ibv_qp_state cur = q->state, next = attr->qp_state;
  if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur) return EINVAL;
  if (next == IBV_QPS_RESET) {
    q->out.close();
    q->in.close();
    q->pendingIn.close();
    q->unacked.clear();
    q->recvs.clear();
    q->inQueue.clear();
    q->outBroken = false;
    q->inHelloOk = false;
    setState(q, IBV_QPS_RESET);
    return 0;
  }
  if (next == IBV_QPS_ERR) {
    moveToError(q);
    return 0;
  }
  if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT) {
    if (!has(mask, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) return EINVAL;
    if (attr->port_num != 1 || attr->pkey_index != 0) return EINVAL;
    q->accessFlags = static_cast<int>(attr->qp_access_flags);
    setState(q, IBV_QPS_INIT);
    return 0;
  }
  if (cur == IBV_QPS_INIT && next == IBV_QPS_INIT) {
    if (mask & IBV_QP_ACCESS_FLAGS) q->accessFlags = static_cast<int>(attr->qp_access_flags);
    return 0;
  }
  if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) {
    if (!has(mask, IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                       IBV_QP_MIN_RNR_TIMER))
      return EINVAL;
    if (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096) return EINVAL;
    // The emulated port is RoCE: the address vector must carry a GRH with the peer's GID.
    if (!attr->ah_attr.is_global || attr->ah_attr.grh.sgid_index > 1) return EINVAL;
    if (attr->ah_attr.port_num != 0 && attr->ah_attr.port_num != 1) return EINVAL;
    q->destQpn = attr->dest_qp_num;
    q->dgid = attr->ah_attr.grh.dgid;
    static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    q->destIpValid = memcmp(q->dgid.raw, kMapped, 12) == 0;
    if (q->destIpValid) memcpy(&q->destIp.s_addr, &q->dgid.raw[12], 4);
    setState(q, IBV_QPS_RTR);
    q->ctx->wake();
    return 0;
  }
  if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS) {
    if (!has(mask, IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
      return EINVAL;
    if (attr->timeout > 31 || attr->retry_cnt > 7 || attr->rnr_retry > 7) return EINVAL;
    q->timeout = attr->timeout;
    q->retryCnt = attr->retry_cnt;
    setState(q, IBV_QPS_RTS);
    return 0;
  }
  if (cur == IBV_QPS_RTS && next == IBV_QPS_RTS) {
    if (mask & IBV_QP_TIMEOUT) q->timeout = attr->timeout;
    if (mask & IBV_QP_RETRY_CNT) q->retryCnt = attr->retry_cnt;
    return 0;
  }
  return EINVAL;
}

EMU_EXPORT int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  auto* q = reinterpret_cast<Qp*>(qp);
  std::lock_guard<std::mutex> lock(q->ctx->mu);
  memset(attr, 0, sizeof(*attr));
  attr->qp_state = q->state;
  attr->cur_qp_state = q->state;
  attr->dest_qp_num = q->destQpn;
  attr->timeout = static_cast<uint8_t>(q->timeout);
  attr->retry_cnt = static_cast<uint8_t>(q->retryCnt);
  attr->cap = q->cap;
  if (init) {
    memset(init, 0, sizeof(*init));
    init->send_cq = qp->send_cq;
    init->recv_cq = qp->recv_cq;
    init->cap = q->cap;
    init->qp_type = IBV_QPT_RC;
  }
  return 0;
}

EMU_EXPORT int ibv_destroy_qp(ibv_qp* qp) {
  auto* q = reinterpret_cast<Qp*>(qp);
  Context* c = q->ctx;
  std::lock_guard<std::mutex> lock(c->mu);
  for (auto it = c->qps.begin(); it != c->qps.end(); ++it) {
    if (it->get() != q) continue;
    q->dead = true;
    q->sendCq->users--;
    q->recvCq->users--;
    c->qps.erase(it);  // the engine may still hold a reference; fds close with the last one
    c->wake();
    return 0;
  }
  return EINVAL;
}

// --- Misc ---

EMU_EXPORT int ibv_fork_init(void) { return 0; }

EMU_EXPORT const char* ibv_wc_status_str(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS: return "success";
    case IBV_WC_LOC_LEN_ERR: return "local length error";
    case IBV_WC_LOC_QP_OP_ERR: return "local QP operation error";
    case IBV_WC_LOC_PROT_ERR: return "local protection error";
    case IBV_WC_WR_FLUSH_ERR: return "Work Request Flushed Error";
    case IBV_WC_REM_INV_REQ_ERR: return "remote invalid request error";
    case IBV_WC_REM_ACCESS_ERR: return "remote access error";
    case IBV_WC_REM_OP_ERR: return "remote operation error";
    case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
    default: return "unknown";
  }
}

EMU_EXPORT int ibv_get_async_event(ibv_context*, ibv_async_event*) {
  errno = EAGAIN;  // no async events are generated
  return -1;
}

EMU_EXPORT void ibv_ack_async_event(ibv_async_event*) {}
