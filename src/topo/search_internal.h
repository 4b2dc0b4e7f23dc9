// The channel searcher shared by search.cc (which configurations to try, in which order, and how
// results compare) and search_channels.cc (finding the channels of one configuration by depth-first
// search over GPU orders, with per-link bandwidth bookkeeping).
#pragma once

#include <vector>

#include "topo/search.h"
#include "topo/system.h"

namespace accl {

// One attempt: a pattern at given per-channel bandwidths and path-type limits.
struct SearchConfig {
  GraphPattern pattern = GraphPattern::Ring;
  bool multiNode = false;
  double bwIntra = 0, bwInter = 0;
  int typeIntra = kPathLoc, typeInter = kPathLoc;
  int crossNic = 0;          // 0: a channel leaves by the NET it entered by
  bool sameChannels = true;  // every channel replays channel 0's GPU order
  int maxChannels = 1;
};

// A channel in node indices (not yet ranks / NET devs).
struct SearchChannel {
  std::vector<int> gpus;
  int netIn = -1, netOut = -1;  // node indices of NETs, or -1
};

struct SearchResult {
  std::vector<SearchChannel> channels;
  int worstIntra = kPathLoc;  // worst path type actually used between GPUs
  int worstInter = kPathLoc;  // worst GPU <-> NET path type used
};

class ChannelSearcher {
 public:
  ChannelSearcher(const TopoSystem& system, long globalBudget, long tryBudget);
  // Finds up to cfg.maxChannels channels, greedily one after the other on a fresh copy of the link
  // bandwidths. Returns false once the global step budget is spent (the result is still valid).
  bool run(const SearchConfig& cfg, SearchResult* out);
  bool exhausted() const { return steps_ >= globalBudget_; }

 private:
  bool channel(const SearchConfig& cfg, const SearchChannel* replay, SearchChannel* out);
  bool dfs(const SearchConfig& cfg, int cur, int exitNet, const SearchChannel* replay, std::vector<char>* used,
           SearchChannel* ch);
  bool closeChannel(const SearchConfig& cfg, int last, int exitNet, SearchChannel* ch);
  bool overBudget();
  // Path bottleneck still free between two nodes (for ordering candidates).
  double residual(int from, int to) const;
  // Reserves (sign +1) or returns (-1) `bw` on every link of path(from, to); reserve fails, changing
  // nothing, when a link lacks capacity.
  bool take(int from, int to, double bw, int sign);
  bool hopOk(const SearchConfig& cfg, int from, int to, bool intra) const;

  const TopoSystem& s_;
  std::vector<int> gpus_, nets_;
  std::vector<std::vector<double>> left_;  // residual bandwidth of each node's links
  std::vector<int> netUses_;               // channels entering by each NET (for spreading)
  long globalBudget_, tryBudget_;
  long steps_ = 0, tryStart_ = 0;
};

}  // namespace accl
