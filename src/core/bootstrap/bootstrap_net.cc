// Bootstrap interface selection and NCCL_COMM_ID parsing (see bootstrap_net.h).
#include "core/bootstrap/bootstrap_net.h"

#include <mutex>

#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace accl {

namespace {

// NCCL_COMM_ID's text parsed, a host name resolved in the family NCCL_SOCKET_FAMILY forces.
ncclResult_t parseCommId(const std::string& text, const SocketIfSetting& setting, SocketAddress* out) {
  ACCL_CHECK(SocketAddress::parse(text, out, setting.family, "NCCL_COMM_ID"));
  if (out->port() == 0)
    return fail(ncclInvalidArgument,
                "NCCL_COMM_ID: '%s' has port 0; a fixed bootstrap root needs a real port", text.c_str());
  return ncclSuccess;
}

}  // namespace

ncclResult_t commIdFromEnv(SocketAddress* out, bool* isSet) {
  std::string text = paramStr("NCCL_COMM_ID");
  *isSet = !text.empty();
  if (!*isSet) return ncclSuccess;
  return parseCommId(text, readSocketIfSetting(), out);
}

ncclResult_t bootstrapNetAddress(SocketAddress* out) {
  // The settings are re-read on every call (tests change them); the choice is logged when it changes.
  static std::mutex mutex;
  static std::string lastKey;
  static SocketAddress lastAddr;

  SocketIfSetting setting = readSocketIfSetting();
  std::string commIdText = paramStr("NCCL_COMM_ID");
  std::string key = setting.ifnameText + "|" + setting.familyText + "|" + commIdText;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!lastKey.empty() && key == lastKey) {
      *out = lastAddr;
      return ncclSuccess;
    }
  }

  // Bootstrap's policy on top of the setting: with no NCCL_SOCKET_IFNAME list, NCCL_COMM_ID's subnet
  // comes after ib* and before the generic choice (selectInterfaces' subnet step).
  SocketAddress commId;
  bool haveCommId = !commIdText.empty();
  if (haveCommId) ACCL_CHECK(parseCommId(commIdText, setting, &commId));
  std::vector<NetInterface> all;
  ACCL_CHECK(listInterfaces(&all));
  std::vector<NetInterface> picked = selectInterfaces(all, setting, haveCommId ? &commId : nullptr, 1);
  if (picked.empty()) {
    std::string names;
    for (const NetInterface& i : all)
      names += (names.empty() ? "" : ", ") + i.name + "=" + i.addr.hostString();
    return fail(ncclInvalidUsage, "bootstrap: no usable network interface (%s); interfaces present: %s",
                setting.describe().c_str(), names.empty() ? "none" : names.c_str());
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
