// Formatting of the accl-ras report (see ras_report.h).
#include "ras/ras_report.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>

#include "core/comm/comm.h"
#include "core/liveness/liveness.h"
#include "util/last_error.h"
#include "util/str_format.h"
#include "util/time.h"

namespace accl {
namespace {

double secondsSince(int64_t thenNs, int64_t nowNs) { return (nowNs - thenNs) / 1e9; }

const char* stateName(int state) {
  switch (static_cast<CommState>(state)) {
    case CommState::Initializing: return "initializing";
    case CommState::Ready: return "ready";
    case CommState::Finalized: return "finalized";
    case CommState::Revoked: return "revoked";
    case CommState::Failed: return "failed";
  }
  return "unknown";
}

// Whether a /proc state means the process cannot take part any more.
bool stateIsDeadOrFrozen(const std::string& s) {
  return s == "stopped" || s == "tracing stop" || s == "zombie" || s == "dead" || s == "exited";
}

std::string deadReason(const std::string& s) {
  if (s == "stopped") return "stopped by a signal, e.g. SIGSTOP";
  if (s == "tracing stop") return "stopped under a debugger";
  if (s == "exited" || s == "zombie" || s == "dead") return "process exited";
  return s;
}

// One local rank's line.
std::string rankLine(const RasCommSnapshot& c, int64_t now) {
  std::string s = strFormat("  rank %d: ", c.rank);
  if (c.busy) {
    s += strFormat("in %s for %.2f s", rasOpText(c.current).c_str(), secondsSince(c.currentSinceNs, now));
    // One entry per waited-for peer, with the longest wait on it.
    std::map<int, int64_t> oldest;
    for (const RasWait& w : c.waits) {
      auto it = oldest.find(w.peer);
      if (it == oldest.end() || w.sinceNs < it->second) oldest[w.peer] = w.sinceNs;
    }
    if (!oldest.empty()) {
      s += "; waiting for ";
      bool first = true;
      for (const auto& [peer, since] : oldest) {
        s += strFormat("%srank %d (%.2f s", first ? "" : ", ", peer, secondsSince(since, now));
        std::string status = c.health ? livenessPeerStatus(c.health.get(), peer) : "";
        s += status.empty() ? ")" : "; " + status + ")";
        first = false;
      }
    } else {
      s += "; no thread is asleep waiting for a peer";
    }
  } else if (c.hasLast) {
    s += strFormat("idle after %llu collective%s and %llu send/recv batch%s; last %s ended %.2f s ago",
                   static_cast<unsigned long long>(c.collSeq), c.collSeq == 1 ? "" : "s",
                   static_cast<unsigned long long>(c.p2pBatches), c.p2pBatches == 1 ? "" : "es",
                   rasOpText(c.last).c_str(), secondsSince(c.lastEndNs, now));
    if (!c.lastNote.empty()) s += " (" + c.lastNote + ")";
  } else {
    s += "idle, no operation yet";
  }
  if (c.state != static_cast<int>(CommState::Ready)) s += strFormat("; communicator %s", stateName(c.state));
  if (c.abortFlag == kAbortByPeerFailure)
    s += "; stopped by a peer failure";
  else if (c.abortFlag != 0)
    s += "; aborted (ncclCommAbort)";
  if (c.asyncResult != ncclSuccess && c.asyncResult != ncclInProgress)
    s += strFormat("; async error %s", ncclGetErrorString(static_cast<ncclResult_t>(c.asyncResult)));
  return s + "\n";
}

// The lines for all local ranks of one communicator (same comm hash).
std::string commBlock(const std::vector<const RasCommSnapshot*>& ranks, int64_t now) {
  const RasCommSnapshot& head = *ranks.front();
  std::string s = strFormat("comm 0x%016llx nranks %d", static_cast<unsigned long long>(head.commHash), head.nranks);
  if (!head.name.empty()) s += " name \"" + head.name + "\"";
  s += ": ranks in this process";
  for (const RasCommSnapshot* r : ranks) s += strFormat(" %d", r->rank);
  if (head.checkCollectives) s += " (ACCL_CHECK_COLLECTIVES on)";
  s += "\n";
  for (const RasCommSnapshot* r : ranks) s += rankLine(*r, now);

  // Peers on this host in other processes: their state from /proc.
  std::string local, dead;
  int shown = 0, notShown = 0;
  for (int p = 0; p < static_cast<int>(head.peers.size()); ++p) {
    const RasPeer& peer = head.peers[p];
    if (!peer.sameHost || peer.sameProcess || peer.pid <= 0) continue;
    std::string st = rasProcessState(peer.pid);
    const bool bad = stateIsDeadOrFrozen(st);
    if (bad) dead += strFormat("%srank %d (pid %d: %s)", dead.empty() ? "" : ", ", p, peer.pid, deadReason(st).c_str());
    if (shown < 32 || bad) {
      local += strFormat("%srank %d pid %d %s", local.empty() ? "" : ", ", p, peer.pid, st.c_str());
      ++shown;
    } else {
      ++notShown;
    }
  }
  if (!local.empty()) {
    s += "  peers on this host: " + local;
    if (notShown) s += strFormat(" (and %d more)", notShown);
    s += "\n";
  }
  // Liveness's verdict (core/liveness/liveness.h): the same failed rank on every survivor.
  for (const RasCommSnapshot* r : ranks)
    if (r->health && r->health->failed()) {
      dead += (dead.empty() ? "" : "; ") + r->health->describe();
      break;
    }
  for (const RasCommSnapshot* r : ranks)
    if (r->asyncResult != ncclSuccess && r->asyncResult != ncclInProgress)
      dead += strFormat("%srank %d's communicator failed with %s (see the last error below)", dead.empty() ? "" : "; ",
                        r->rank, ncclGetErrorString(static_cast<ncclResult_t>(r->asyncResult)));
  s += "  dead or unreachable: " + (dead.empty() ? std::string("none known to this process") : dead) + "\n";
  return s;
}

}  // namespace

std::string rasProcessState(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) {
    if (kill(pid, 0) == 0 || errno == EPERM) return "unknown";
    return "exited";
  }
  // "pid (comm) S ...": the state follows the last ')' (comm may contain anything).
  size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return "unknown";
  switch (line[close + 2]) {
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'D': return "disk sleep";
    case 'I': return "idle";
    case 'T': return "stopped";
    case 't': return "tracing stop";
    case 'Z': return "zombie";
    case 'X': case 'x': return "dead";
    default: return "unknown";
  }
}

std::string rasFormatReport(const std::vector<RasCommSnapshot>& comms, int64_t now) {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) snprintf(host, sizeof(host), "?");
  // Group the local ranks of each communicator, in order of comm hash then rank.
  std::vector<const RasCommSnapshot*> sorted;
  for (const RasCommSnapshot& c : comms) sorted.push_back(&c);
  std::sort(sorted.begin(), sorted.end(), [](const RasCommSnapshot* a, const RasCommSnapshot* b) {
    return a->commHash != b->commHash ? a->commHash < b->commHash : a->rank < b->rank;
  });
  std::vector<std::vector<const RasCommSnapshot*>> groups;
  for (const RasCommSnapshot* c : sorted) {
    if (groups.empty() || groups.back().front()->commHash != c->commHash) groups.emplace_back();
    groups.back().push_back(c);
  }
  std::string s = strFormat("accl-ras: process %d on host %s (library %d.%d.%d), %zu communicator%s\n",
                            static_cast<int>(getpid()), host, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, groups.size(),
                            groups.size() == 1 ? "" : "s");
  for (const auto& group : groups) s += commBlock(group, now);
  std::string err = lastErrorText();
  if (!err.empty()) s += "last error in this process: " + err + "\n";
  return s;
}

std::string rasReportText() {
  std::vector<RasCommSnapshot> comms = rasSnapshot();
  return rasFormatReport(comms, nowNs());  // "now" after the snapshot: no negative durations
}

}  // namespace accl
