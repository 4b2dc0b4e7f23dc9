// TopoPolicy::fromEnv: the topology policy knobs, read once from the environment (param_list.h).
#include <string>

#include "topo/system.h"
#include "util/check.h"
#include "util/params.h"

namespace accl {
namespace {

ncclResult_t readLevel(const char* name, int* out) {
  std::string text = paramStr(name);
  *out = -1;
  if (text.empty()) return ncclSuccess;
  if (!topoParsePathLevel(text, out)) {
    return fail(ncclInvalidUsage,
                "%s: unknown path level (%s); use LOC NVL NVB C2C PIX PXB P2C PXN PHB SYS or 0-5", name,
                text.c_str());
  }
  ACCL_INFO(ACCL_LOG_ENV, "%s set by environment to %s", name, topoPathTypeName(*out));
  return ncclSuccess;
}

}  // namespace

ncclResult_t TopoPolicy::fromEnv(TopoPolicy* out) {
  TopoPolicy p;
  ACCL_CHECK(readLevel("NCCL_P2P_LEVEL", &p.p2pLevel));
  ACCL_CHECK(readLevel("NCCL_NET_GDR_LEVEL", &p.netGdrLevel));
  p.p2pDisable = paramInt("NCCL_P2P_DISABLE") == 1;
  p.shmDisable = paramInt("NCCL_SHM_DISABLE") == 1;
  p.nvbDisable = paramInt("NCCL_NVB_DISABLE") == 1;
  p.pxnDisable = paramInt("NCCL_PXN_DISABLE") == 1;
  p.pxnC2c = paramInt("NCCL_PXN_C2C") != 0;
  p.gdrC2c = paramInt("NCCL_NET_GDR_C2C") != 0;
  *out = p;
  return ncclSuccess;
}

}  // namespace accl
