// The device-API host entry points (nccl_device.h in NCCL 2.28) as a client sees them through
// libnccl.so: resource calls are refused with a message naming the call, the LL all-to-all slot
// count follows NCCL's formula, and team helpers describe a single-node communicator.
#include <climits>
#include <cstring>

#include <gtest/gtest.h>

#include "nccl.h"

// Same layout as NVIDIA's nccl_device/core.h (checked by device_api_nvidia_check.cc).
struct ncclTeam {
  int nRanks, rank, stride;
};
#include "device_api_decls.h"

namespace {

void expectTeam(ncclTeam t, int nRanks, int rank, int stride) {
  EXPECT_EQ(t.nRanks, nRanks);
  EXPECT_EQ(t.rank, rank);
  EXPECT_EQ(t.stride, stride);
}

void expectRefused(ncclResult_t res, const char* call) {
  EXPECT_EQ(res, ncclInvalidUsage);
  const char* msg = ncclGetLastError(nullptr);
  ASSERT_NE(msg, nullptr);
  EXPECT_NE(std::strstr(msg, call), nullptr) << "last error \"" << msg << "\" does not name " << call;
}

TEST(DeviceApi, ResourceCallsAreRefusedByName) {
  expectRefused(ncclDevCommCreate(nullptr, nullptr, nullptr), "ncclDevCommCreate");
  expectRefused(ncclDevCommDestroy(nullptr, nullptr), "ncclDevCommDestroy");
  expectRefused(ncclLsaBarrierCreateRequirement(ncclTeam{1, 0, 1}, 1, nullptr, nullptr),
                "ncclLsaBarrierCreateRequirement");
  expectRefused(ncclGinBarrierCreateRequirement(nullptr, ncclTeam{1, 0, 1}, 1, nullptr, nullptr),
                "ncclGinBarrierCreateRequirement");
  expectRefused(ncclLLA2ACreateRequirement(1, 1, nullptr, nullptr), "ncclLLA2ACreateRequirement");
}

TEST(DeviceApi, LLA2ASlotsAreEightBytePiecesPerElement) {
  EXPECT_EQ(ncclLLA2ACalcSlots(32, 16), 64);  // 16-byte elements take two slots each
  EXPECT_EQ(ncclLLA2ACalcSlots(5, 1), 5);     // anything up to 8 bytes takes one
  EXPECT_EQ(ncclLLA2ACalcSlots(7, 8), 7);
  EXPECT_EQ(ncclLLA2ACalcSlots(3, 9), 6);     // 9 bytes round up to two slots
  EXPECT_EQ(ncclLLA2ACalcSlots(1, 1), 1);
  EXPECT_EQ(ncclLLA2ACalcSlots(0, 8), 0);
  EXPECT_EQ(ncclLLA2ACalcSlots(13, 0), 0);
  EXPECT_EQ(ncclLLA2ACalcSlots(-4, 8), 0);
  EXPECT_EQ(ncclLLA2ACalcSlots(INT_MAX, 64), INT_MAX);  // saturates instead of overflowing
}

TEST(DeviceApi, TeamsOfAnInvalidCommAreEmpty) {
  expectTeam(ncclTeamWorld(nullptr), 0, 0, 1);
  expectTeam(ncclTeamLsa(nullptr), 0, 0, 1);
  expectTeam(ncclTeamRail(nullptr), 0, 0, 1);
}

TEST(DeviceApi, TeamsOfASingleRankComm) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess) << ncclGetLastError(nullptr);
  expectTeam(ncclTeamWorld(comm), 1, 0, 1);
  expectTeam(ncclTeamLsa(comm), 1, 0, 1);
  expectTeam(ncclTeamRail(comm), 1, 0, 1);
  ncclTeam world = ncclTeamWorld(comm);
  EXPECT_EQ(ncclTeamRankToWorld(comm, world, 0), 0);
  EXPECT_EQ(ncclTeamRankToLsa(comm, world, 0), 0);
  // A strided team in which the caller (world rank 0) is member 1 of 4, stride 2: member 3 is two
  // steps further, i.e. world rank 0 + (3 - 1) * 2.
  ncclTeam strided{4, 1, 2};
  EXPECT_EQ(ncclTeamRankToWorld(comm, strided, 3), 4);
  EXPECT_EQ(ncclTeamRankToWorld(comm, strided, 1), 0);
  EXPECT_EQ(ncclTeamRankToLsa(comm, strided, 2), 2);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace
