// IB network device discovery: the verbs devices' active ports (InfiniBand or RoCE), filtered by
// NCCL_IB_HCA ([^][=]name[:port],...), with their speed, PCI path, RoCE GID choice
// (NCCL_IB_GID_INDEX, else the first GID of NCCL_IB_ADDR_FAMILY and NCCL_IB_ROCE_VERSION_NUM) and
// GPUDirect RDMA capability (nvidia-peermem / nv_mem sysfs files, or a dma-buf registration probe).
#if __has_include(<infiniband/verbs.h>)
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "transports/net/ib/ib_net_internal.h"
#include "util/check.h"
#include "util/log.h"
#include "util/net_interfaces.h"
#include "util/params.h"

namespace accl::ib {

namespace {

// Gb/s per lane of ibv_port_attr.active_speed, and lanes of active_width.
double laneGbps(int speed) {
  switch (speed) {
    case 1: return 2.5;
    case 2: return 5.0;
    case 4: case 8: return 10.0;
    case 16: return 14.0;
    case 32: return 25.0;
    case 64: return 50.0;
    case 128: return 100.0;
    case 256: return 200.0;
    default: return 10.0;
  }
}

int lanes(int width) {
  switch (width) {
    case 1: return 1;
    case 2: return 4;
    case 4: return 8;
    case 8: return 12;
    case 16: return 2;
    default: return 1;
  }
}

bool fileExists(const char* path) { return access(path, F_OK) == 0; }

// RoCE version of a GID from sysfs (1 or 2); 0 when unknown (no sysfs entry, e.g. the emulator).
int gidRoceVersion(const std::string& dev, int port, int index) {
  std::string path = "/sys/class/infiniband/" + dev + "/ports/" + std::to_string(port) + "/gid_attrs/types/" +
                     std::to_string(index);
  std::ifstream f(path);
  std::string text;
  if (!f || !std::getline(f, text)) return 0;
  if (text.find("RoCE v2") != std::string::npos) return 2;
  return 1;
}

bool isZero(const ibv_gid& g) {
  for (uint8_t b : g.raw)
    if (b) return false;
  return true;
}

bool isV4Mapped(const ibv_gid& g) {
  static const uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return memcmp(g.raw, kPrefix, 12) == 0;
}

ncclResult_t chooseGid(const IbvTable* ibv, IbDev* d) {
  if (d->portAttr.link_layer != IBV_LINK_LAYER_ETHERNET) {  // InfiniBand: LID routing, GID 0
    d->gidIndex = 0;
    if (ibv->queryGid(d->ctx, static_cast<uint8_t>(d->port), 0, &d->gid) != 0) memset(&d->gid, 0, sizeof(d->gid));
    return ncclSuccess;
  }
  int64_t forced = paramInt("NCCL_IB_GID_INDEX");
  if (forced >= 0) {
    if (forced >= d->portAttr.gid_tbl_len ||
        ibv->queryGid(d->ctx, static_cast<uint8_t>(d->port), static_cast<int>(forced), &d->gid) != 0)
      return fail(ncclInvalidArgument, "NET/IB: NCCL_IB_GID_INDEX = %lld is not a valid GID index of %s:%d (%d entries)",
                  static_cast<long long>(forced), d->devName.c_str(), d->port, d->portAttr.gid_tbl_len);
    d->gidIndex = static_cast<int>(forced);
    return ncclSuccess;
  }
  int family = parseSocketFamily(paramStr("NCCL_IB_ADDR_FAMILY"), "NCCL_IB_ADDR_FAMILY");
  if (family == AF_UNSPEC) family = AF_INET;
  int version = static_cast<int>(paramInt("NCCL_IB_ROCE_VERSION_NUM"));
  int fallback = -1;
  for (int i = 0; i < d->portAttr.gid_tbl_len; i++) {
    ibv_gid g{};
    if (ibv->queryGid(d->ctx, static_cast<uint8_t>(d->port), i, &g) != 0 || isZero(g)) continue;
    bool linkLocal = g.raw[0] == 0xfe && (g.raw[1] & 0xc0) == 0x80;
    int gidFamily = isV4Mapped(g) ? AF_INET : AF_INET6;
    if (gidFamily != family || (family == AF_INET6 && linkLocal)) continue;
    int v = gidRoceVersion(d->devName, d->port, i);
    if (v != 0 && v != version) {
      if (fallback < 0) fallback = i;
      continue;
    }
    d->gidIndex = i;
    d->gid = g;
    return ncclSuccess;
  }
  d->gidIndex = fallback >= 0 ? fallback : 0;
  if (ibv->queryGid(d->ctx, static_cast<uint8_t>(d->port), d->gidIndex, &d->gid) != 0) memset(&d->gid, 0, sizeof(d->gid));
  ACCL_INFO(ACCL_LOG_NET, "NET/IB: %s:%d has no %s RoCE v%d GID; using GID index %d", d->devName.c_str(), d->port,
            family == AF_INET ? "AF_INET" : "AF_INET6", version, d->gidIndex);
  return ncclSuccess;
}

void detectGdr(const IbvTable* ibv, IbDev* d) {
  d->gdrPeermem = fileExists("/sys/kernel/mm/memory_peers/nv_mem/version") ||
                  fileExists("/sys/kernel/mm/memory_peers/nv_mem_nc/version") ||
                  fileExists("/sys/module/nvidia_peermem/version");
  if (ibv->regDmabufMr) {
    errno = 0;
    ibv_mr* mr = ibv->regDmabufMr(d->pd, 0, 0, 0, -1, 0);
    if (mr) {
      ibv->deregMr(mr);
      d->gdrDmaBuf = true;
    } else {
      d->gdrDmaBuf = errno != EOPNOTSUPP && errno != EPROTONOSUPPORT;
    }
  }
}

}  // namespace

std::string gidString(const uint8_t gid[16]) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", gid[0],
           gid[1], gid[2], gid[3], gid[4], gid[5], gid[6], gid[7], gid[8], gid[9], gid[10], gid[11], gid[12], gid[13],
           gid[14], gid[15]);
  return buf;
}

void closeIbDevice(const IbvTable* ibv, IbDev* d) {
  {
    std::lock_guard<std::mutex> lock(d->mrMu);
    for (auto& e : d->mrCache) ibv->deregMr(e->mr);
    d->mrCache.clear();
  }
  if (d->pd) ibv->deallocPd(d->pd);
  if (d->ctx && d->ownsCtx) ibv->closeDevice(d->ctx);
  d->pd = nullptr;
  d->ctx = nullptr;
}

ncclResult_t discoverIbDevices(const IbvTable* ibv, std::vector<std::unique_ptr<IbDev>>* out) {
  out->clear();
  int n = 0;
  ibv_device** list = ibv->getDeviceList(&n);
  if (!list) {
    ACCL_INFO(ACCL_LOG_NET | ACCL_LOG_INIT, "NET/IB: %s lists no devices (errno %d)", ibv->path.c_str(), errno);
    return ncclSuccess;
  }
  std::string hcaSpec = paramStr("NCCL_IB_HCA");
  IfNameFilter filter = IfNameFilter::parse(hcaSpec);
  bool filtering = !hcaSpec.empty() && (filter.exclude || !filter.entries.empty());
  int64_t ro = paramInt("NCCL_IB_PCI_RELAXED_ORDERING");
  ncclResult_t res = ncclSuccess;
  for (int i = 0; i < n && res == ncclSuccess; i++) {
    const char* name = ibv->getDeviceName(list[i]);
    if (!name) continue;
    ibv_context* ctx = ibv->openDevice(list[i]);
    if (!ctx) {
      ACCL_INFO(ACCL_LOG_NET, "NET/IB: cannot open %s (errno %d); skipped", name, errno);
      continue;
    }
    ibv_device_attr dattr{};
    if (ibv->queryDevice(ctx, &dattr) != 0) {
      ACCL_INFO(ACCL_LOG_NET, "NET/IB: cannot query %s; skipped", name);
      ibv->closeDevice(ctx);
      continue;
    }
    bool used = false;
    for (int port = 1; port <= dattr.phys_port_cnt; port++) {
      ibv_port_attr pattr{};
      if (ibv->queryPort(ctx, static_cast<uint8_t>(port), &pattr) != 0) continue;
      if (pattr.state != IBV_PORT_ACTIVE) {
        ACCL_INFO(ACCL_LOG_NET, "NET/IB: %s:%d is not active; skipped", name, port);
        continue;
      }
      if (pattr.link_layer != IBV_LINK_LAYER_INFINIBAND && pattr.link_layer != IBV_LINK_LAYER_ETHERNET) continue;
      if (filtering && !filter.matches(name, port)) continue;
      auto d = std::make_unique<IbDev>();
      d->devName = name;
      d->port = port;
      d->ctx = ctx;
      d->devAttr = dattr;
      d->portAttr = pattr;
      d->speedMbps = static_cast<int>(laneGbps(pattr.active_speed) * lanes(pattr.active_width) * 1000);
      char real[PATH_MAX];
      std::string sys = "/sys/class/infiniband/" + d->devName + "/device";
      if (realpath(sys.c_str(), real)) d->pciPath = real;
      d->pd = ibv->allocPd(ctx);
      if (!d->pd) {
        ACCL_INFO(ACCL_LOG_NET, "NET/IB: cannot allocate a protection domain on %s; skipped", name);
        break;
      }
      res = chooseGid(ibv, d.get());
      if (res != ncclSuccess) {
        ibv->deallocPd(d->pd);
        break;
      }
      d->relaxedOrdering = ro == 1 || (ro == 2 && ibv->regMrIova2 != nullptr);
      detectGdr(ibv, d.get());
      ACCL_INFO(ACCL_LOG_NET | ACCL_LOG_INIT, "NET/IB: %s:%d %s, %d Mb/s, GID %d %s%s%s", name, port,
                pattr.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "IB", d->speedMbps, d->gidIndex,
                gidString(d->gid.raw).c_str(), d->gdrPeermem ? ", GDR peermem" : "",
                d->gdrDmaBuf ? ", GDR dma-buf" : "");
      // Every port shares the device's context; the first port's IbDev owns (closes) it.
      d->ownsCtx = !used;
      used = true;
      out->push_back(std::move(d));
    }
    if (!used) ibv->closeDevice(ctx);
  }
  ibv->freeDeviceList(list);
  return res;
}

}  // namespace accl::ib
#endif  // __has_include(<infiniband/verbs.h>)
