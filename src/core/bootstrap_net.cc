// Bootstrap interface selection and NCCL_COMM_ID parsing (see bootstrap_net.h).
#include "core/bootstrap_net.h"

#include <mutex>

#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace accl {

ncclResult_t commIdFromEnv(SocketAddress* out, bool* isSet) {
  std::string text = paramStr("NCCL_COMM_ID");
  *isSet = !text.empty();
  if (!*isSet) return ncclSuccess;
  ACCL_CHECK(
      SocketAddress::parse(text, out, parseSocketFamily(paramStr("NCCL_SOCKET_FAMILY")), "NCCL_COMM_ID"));
  if (out->port() == 0)
    return fail(ncclInvalidArgument,
                "NCCL_COMM_ID: '%s' has port 0; a fixed bootstrap root needs a real port", text.c_str());
  return ncclSuccess;
}

ncclResult_t bootstrapNetAddress(SocketAddress* out) {
  // The settings are re-read on every call (tests change them); the choice is logged when it changes.
  static std::mutex mutex;
  static std::string lastKey;
  static SocketAddress lastAddr;

  std::string ifname = paramStr("NCCL_SOCKET_IFNAME");
  std::string familyText = paramStr("NCCL_SOCKET_FAMILY");
  std::string commIdText = paramStr("NCCL_COMM_ID");
  std::string key = ifname + "|" + familyText + "|" + commIdText;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!lastKey.empty() && key == lastKey) {
      *out = lastAddr;
      return ncclSuccess;
    }
  }

  SocketAddress commId;
  bool haveCommId = false;
  ACCL_CHECK(commIdFromEnv(&commId, &haveCommId));
  std::vector<NetInterface> all;
  ACCL_CHECK(listInterfaces(&all));
  int family = parseSocketFamily(familyText);
  std::vector<NetInterface> picked = selectInterfaces(all, ifname, family, haveCommId ? &commId : nullptr, 1);
  if (picked.empty()) {
    std::string names;
    for (const NetInterface& i : all)
      names += (names.empty() ? "" : ", ") + i.name + "=" + i.addr.hostString();
    return fail(ncclInvalidUsage,
                "bootstrap: no usable network interface (NCCL_SOCKET_IFNAME='%s', NCCL_SOCKET_FAMILY='%s'); "
                "interfaces present: %s",
                ifname.c_str(), familyText.c_str(), names.empty() ? "none" : names.c_str());
  }
  ACCL_INFO(ACCL_LOG_BOOTSTRAP | ACCL_LOG_INIT, "Bootstrap: using %s:%s", picked[0].name.c_str(),
            picked[0].addr.hostString().c_str());
  std::lock_guard<std::mutex> lock(mutex);
  lastKey = key;
  lastAddr = picked[0].addr;
  *out = lastAddr;
  return ncclSuccess;
}

}  // namespace accl
