// Tree shapes for tree all-reduce: a double binary tree across nodes (two complementary binary
// trees, so that a node that is interior in one is a leaf or near-leaf in the other, and each
// channel uses one of them) and a chain through the ranks inside each node. Pure functions of
// the node layout, so they are unit-tested directly.
#pragma once

#include <vector>

#include "device/common/topology_view.h"

namespace accl {

// Parent and up to two children of `node` in binary tree `which` (0 or 1) over nNodes nodes;
// -1 where absent. Tree 0 is a balanced in-order binary tree (the middle node is the root);
// tree 1 is tree 0 mirrored (even node count) or shifted by one (odd count), so the two trees
// put different nodes in the interior and spread the forwarding work.
void binaryTreeNode(int nNodes, int node, int which, int* parent, int* child0, int* child1);

// The TreeView of `rank` for tree `which`: the first rank of each node joins the node tree and
// chains down to the node's other ranks in rank order.
TreeView buildTreeView(const std::vector<int>& nodeOfRank, int rank, int which);

}  // namespace accl
