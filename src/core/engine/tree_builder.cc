// Double binary tree + intra-node chain construction.
#include "core/engine/tree_builder.h"

namespace accl {
namespace {

// Balanced in-order binary tree over 0..n-1: the root of a range [lo, hi) is its middle, the
// left and right halves hang below it.
void inOrderTree(int n, int i, int* parent, int* c0, int* c1) {
  *parent = *c0 = *c1 = -1;
  int lo = 0, hi = n, up = -1;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (mid == i) {
      *parent = up;
      if (lo < mid) *c0 = lo + (mid - lo) / 2;
      if (mid + 1 < hi) *c1 = (mid + 1) + (hi - mid - 1) / 2;
      return;
    }
    up = mid;
    if (i < mid)
      hi = mid;
    else
      lo = mid + 1;
  }
}

}  // namespace

void binaryTreeNode(int nNodes, int node, int which, int* parent, int* child0, int* child1) {
  if (which == 0 || nNodes <= 2) {
    inOrderTree(nNodes, node, parent, child0, child1);
    return;
  }
  // Tree 1: relabel, build tree 0 on the relabeled ids, map back.
  const bool mirror = nNodes % 2 == 0;
  auto to = [&](int x) { return mirror ? nNodes - 1 - x : (x + nNodes - 1) % nNodes; };
  auto from = [&](int x) { return x < 0 ? -1 : (mirror ? nNodes - 1 - x : (x + 1) % nNodes); };
  int p, c0, c1;
  inOrderTree(nNodes, to(node), &p, &c0, &c1);
  *parent = from(p);
  *child0 = from(c0);
  *child1 = from(c1);
}

TreeView buildTreeView(const std::vector<int>& nodeOfRank, int rank, int which) {
  TreeView view;
  view.up = -1;
  for (int& d : view.down) d = -1;
  const int nranks = static_cast<int>(nodeOfRank.size());
  int nNodes = 0;
  for (int n : nodeOfRank) nNodes = n + 1 > nNodes ? n + 1 : nNodes;
  // Ranks of each node, in rank order.
  std::vector<std::vector<int>> members(nNodes);
  for (int r = 0; r < nranks; ++r) members[nodeOfRank[r]].push_back(r);
  const int node = nodeOfRank[rank];
  const std::vector<int>& local = members[node];
  int localIndex = 0;
  while (local[localIndex] != rank) ++localIndex;

  int nDown = 0;
  if (localIndex == 0) {
    int parent, c0, c1;
    binaryTreeNode(nNodes, node, which, &parent, &c0, &c1);
    if (parent >= 0) view.up = members[parent][0];
    if (c0 >= 0) view.down[nDown++] = members[c0][0];
    if (c1 >= 0) view.down[nDown++] = members[c1][0];
  } else {
    view.up = local[localIndex - 1];
  }
  if (localIndex + 1 < static_cast<int>(local.size())) view.down[nDown++] = local[localIndex + 1];
  return view;
}

}  // namespace accl
