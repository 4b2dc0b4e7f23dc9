// RasOp: one launch of a rank as accl-ras shows it, and its one-line text. Core's launch path
// (core/engine/launch_record.h) fills it with plain data; the registry (ras_comms.h) keeps the current
// and the last one of each rank; the report (ras/ras_report.h) prints it.
#pragma once

#include <cstdint>
#include <string>

namespace accl {

// The first collective of a launch (or its first send/recv) and how many of each the launch holds.
struct RasOp {
  int func = -1;         // FuncId of the first collective; -1: a send/recv-only launch
  uint64_t seq = 0;      // the first collective's sequence number (1 = the comm's first), or the send/recv batch's
  uint64_t count = 0;
  int type = -1;         // ncclDataType_t
  // The reduction's name ("sum"; "custom" for a user-created op); null when the function does not reduce.
  const char* redOp = nullptr;
  int root = -1;         // -1 when the function has no root
  int nColl = 0;         // collectives in the launch
  int nP2p = 0;          // sends and receives in the launch
  int firstPeer = -1;    // the first send/recv's peer
  bool firstIsSend = false;
};

// "AllReduce #42 (count 1024 float sum)", "Broadcast #3 (count 8 int32 root 1) + 2 more
// collectives", "send/recv batch #7 (send to 1, 3 ops)".
std::string rasOpText(const RasOp& op);

}  // namespace accl
