// The text of a launch for accl-ras and long-wait logs (see ras_op.h).
#include "activity/ras_op.h"

#include "device/common/dtypes.h"
#include "tuner/algo_proto_filter.h"
#include "util/str_format.h"

namespace accl {

std::string rasOpText(const RasOp& op) {
  if (op.func < 0) {
    std::string s = strFormat("send/recv batch #%llu (%s %d", static_cast<unsigned long long>(op.seq),
                              op.firstIsSend ? "send to" : "recv from", op.firstPeer);
    if (op.nP2p > 1) s += strFormat(", %d ops", op.nP2p);
    return s + ")";
  }
  std::string s = strFormat("%s #%llu (count %llu %s", funcName(op.func), static_cast<unsigned long long>(op.seq),
                            static_cast<unsigned long long>(op.count), dtypeName(static_cast<ncclDataType_t>(op.type)));
  if (op.redOp) s += std::string(" ") + op.redOp;
  if (op.root >= 0) s += strFormat(" root %d", op.root);
  s += ")";
  if (op.nColl > 1) s += strFormat(" + %d more collective%s", op.nColl - 1, op.nColl > 2 ? "s" : "");
  if (op.nP2p > 0) s += strFormat(" + %d send/recv", op.nP2p);
  return s;
}

}  // namespace accl
