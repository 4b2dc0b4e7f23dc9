// The device-API host entry points (nccl_device/host.h, NCCL 2.28-2.32) as a client sees them
// through libnccl.so: resource calls are refused with a message naming the call, the LL
// all-to-all slot count follows NCCL's formula, team helpers describe a single-node communicator
// with no CFT fabric, and ncclCommQueryProperties reports the host backend's honest values.
// The GPU-only calls of nccl.h and nccl_device (signals, window pointers, CFT/GIN requirements)
// and ncclSetEncryption are in device_api_gpu_only_test.cc.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <vector>

#include "device_api_client.h"

#define ACCL_PROPS_TYPE ncclCommProperties_t
ACCL_ASSERT_COMM_PROPERTIES_LAYOUT()

namespace accl::abi {
namespace {

void expectTeam(ncclTeam t, int nRanks, int rank, int stride) {
  EXPECT_EQ(t.nRanks, nRanks);
  EXPECT_EQ(t.rank, rank);
  EXPECT_EQ(t.stride, stride);
}

// Valid arguments, refused because the host backend has no device-side communication. The
// handles and requirement structs stay opaque here; the calls must not write to them.
TEST(DeviceApi, ResourceCallsAreRefusedByName) {
  LocalComms comms(2);
  alignas(64) unsigned char handle[256], req[256];
  std::memset(handle, 0x5a, sizeof(handle));
  std::memset(req, 0x5a, sizeof(req));
  auto* r = reinterpret_cast<ncclDevResourceRequirements*>(req);
  struct {
    size_t size;
    unsigned magic, version;
    unsigned char rest[232];
  } reqs = {sizeof(reqs), 0xcafebeefu, 23203, {}};
  auto* devCommReqs = reinterpret_cast<const ncclDevCommRequirements*>(&reqs);
  auto* devComm = reinterpret_cast<ncclDevComm*>(handle);
  expectRefused(ncclDevCommCreate(comms[0], devCommReqs, devComm), "ncclDevCommCreate", "host backend");
  expectRefused(ncclDevCommDestroy(comms[0], devComm), "ncclDevCommDestroy", "host backend");
  expectRefused(
      ncclLsaBarrierCreateRequirement(ncclTeam{2, 1, 1}, 1, reinterpret_cast<ncclLsaBarrierHandle*>(handle), r),
      "ncclLsaBarrierCreateRequirement");
  expectRefused(ncclGinBarrierCreateRequirement(comms[1], ncclTeam{2, 1, 1}, 3,
                                                reinterpret_cast<ncclGinBarrierHandle*>(handle), r),
                "ncclGinBarrierCreateRequirement", "host backend");
  expectRefused(
      ncclLLA2ACreateRequirement(2, ncclLLA2ACalcSlots(32, 16), reinterpret_cast<ncclLLA2AHandle*>(handle), r),
      "ncclLLA2ACreateRequirement");
  for (unsigned char b : handle) ASSERT_EQ(b, 0x5a);
  for (unsigned char b : req) ASSERT_EQ(b, 0x5a);
}

TEST(DeviceApi, ResourceCallArgumentsAreCheckedFirst) {
  LocalComms comms(1);
  alignas(64) unsigned char handle[256], req[256];
  auto* r = reinterpret_cast<ncclDevResourceRequirements*>(req);
  auto* lsa = reinterpret_cast<ncclLsaBarrierHandle*>(handle);
  auto* gin = reinterpret_cast<ncclGinBarrierHandle*>(handle);
  auto* lla = reinterpret_cast<ncclLLA2AHandle*>(handle);
  auto* devComm = reinterpret_cast<ncclDevComm*>(handle);
  struct {
    size_t size;
    unsigned magic, version;
  } reqs = {sizeof(reqs), 0, 23203};
  auto* devCommReqs = reinterpret_cast<const ncclDevCommRequirements*>(&reqs);
  expectInvalidArgument(ncclDevCommCreate(nullptr, devCommReqs, devComm), "ncclDevCommCreate");
  expectInvalidArgument(ncclDevCommCreate(comms[0], nullptr, devComm), "ncclDevCommCreate", "reqs");
  expectInvalidArgument(ncclDevCommCreate(comms[0], devCommReqs, nullptr), "ncclDevCommCreate", "outDevComm");
  // As NCCL: requirements not made by their initializer are a usage error.
  expectFailure(ncclDevCommCreate(comms[0], devCommReqs, devComm), ncclInvalidUsage, "ncclDevCommCreate", "magic");
  expectInvalidArgument(ncclDevCommDestroy(nullptr, devComm), "ncclDevCommDestroy");
  expectInvalidArgument(ncclDevCommDestroy(comms[0], nullptr), "ncclDevCommDestroy", "devComm");
  expectInvalidArgument(ncclLsaBarrierCreateRequirement(ncclTeam{0, 0, 1}, 1, lsa, r),
                        "ncclLsaBarrierCreateRequirement", "team");
  expectInvalidArgument(ncclLsaBarrierCreateRequirement(ncclTeam{1, 0, 1}, 0, lsa, r),
                        "ncclLsaBarrierCreateRequirement", "nBarriers");
  expectInvalidArgument(ncclLsaBarrierCreateRequirement(ncclTeam{1, 0, 1}, 1, nullptr, r),
                        "ncclLsaBarrierCreateRequirement", "outHandle");
  expectInvalidArgument(ncclLsaBarrierCreateRequirement(ncclTeam{1, 0, 1}, 1, lsa, nullptr),
                        "ncclLsaBarrierCreateRequirement", "outReq");
  expectInvalidArgument(ncclGinBarrierCreateRequirement(nullptr, ncclTeam{1, 0, 1}, 1, gin, r),
                        "ncclGinBarrierCreateRequirement");
  expectInvalidArgument(ncclGinBarrierCreateRequirement(comms[0], ncclTeam{3, 3, 1}, 1, gin, r),
                        "ncclGinBarrierCreateRequirement", "team");
  expectInvalidArgument(ncclGinBarrierCreateRequirement(comms[0], ncclTeam{1, 0, 1}, -2, gin, r),
                        "ncclGinBarrierCreateRequirement", "nBarriers");
  expectInvalidArgument(ncclLLA2ACreateRequirement(0, 4, lla, r), "ncclLLA2ACreateRequirement", "nBlocks");
  expectInvalidArgument(ncclLLA2ACreateRequirement(1, 0, lla, r), "ncclLLA2ACreateRequirement", "nSlots");
  expectInvalidArgument(ncclLLA2ACreateRequirement(1, 4, nullptr, r), "ncclLLA2ACreateRequirement", "outHandle");
}

TEST(DeviceApi, LLA2ASlotsAreEightBytePiecesPerElement) {
  EXPECT_EQ(ncclLLA2ACalcSlots(32, 16), 64);  // 16-byte elements take two slots each
  EXPECT_EQ(ncclLLA2ACalcSlots(5, 1), 5);     // anything up to 8 bytes takes one
  EXPECT_EQ(ncclLLA2ACalcSlots(7, 8), 7);
  EXPECT_EQ(ncclLLA2ACalcSlots(3, 9), 6);  // 9 bytes round up to two slots
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

// ---- Teams of 2.32: CFT ----------------------------------------------------------------------

TEST(DeviceApi, CftTeamsHoldOnlyTheCaller) {
  LocalComms comms(3);
  for (int r = 0; r < 3; ++r) {
    for (ncclCftTeamMode_t mode : {NCCL_CFT_TEAM_FLAT, NCCL_CFT_TEAM_HIER_MULTIMEM, NCCL_CFT_TEAM_HIER_LSA})
      expectTeam(ncclTeamCft(comms[r], mode), 1, 0, 1);
    expectTeam(ncclTeamCftMultimem(comms[r]), 1, 0, 1);
    // The LSA and world teams are still the whole communicator.
    expectTeam(ncclTeamLsa(comms[r]), 3, r, 1);
  }
}

TEST(DeviceApi, CftTeamsOfAnInvalidCommOrModeAreEmpty) {
  expectTeam(ncclTeamCft(nullptr, NCCL_CFT_TEAM_FLAT), 0, 0, 1);
  expectTeam(ncclTeamCftMultimem(nullptr), 0, 0, 1);
  LocalComms comms(1);
  expectTeam(ncclTeamCft(comms[0], static_cast<ncclCftTeamMode_t>(3)), 0, 0, 1);
  EXPECT_NE(std::strstr(ncclGetLastError(nullptr), "ncclTeamCft"), nullptr) << ncclGetLastError(nullptr);
}

// ---- ncclCommQueryProperties --------------------------------------------------------------------

ncclCommProperties_t freshProperties() {
  ncclCommProperties_t p;
  std::memset(&p, 0xab, sizeof(p));  // a value the library must overwrite
  p.size = sizeof(p);
  p.magic = 0xcafebeefu;
  p.version = 23203;
  return p;
}

// Rank, size and device of each rank; no device API, multimem, GIN, host RMA or CFT; one LSA team.
TEST(DeviceApi, QueryPropertiesReportsTheHostBackend) {
  for (int n : {1, 2, 3, 5}) {
    LocalComms comms(n);
    uint64_t hash0 = 0;
    for (int r = 0; r < n; ++r) {
      ncclCommProperties_t p = freshProperties();
      ASSERT_EQ(ncclCommQueryProperties(comms[r], &p), ncclSuccess) << ncclGetLastError(nullptr);
      EXPECT_EQ(p.size, sizeof(p));
      EXPECT_EQ(p.magic, 0xcafebeefu);
      EXPECT_EQ(p.version, 23203u);
      EXPECT_EQ(p.rank, r);
      EXPECT_EQ(p.nRanks, n);
      int dev = -1;
      ASSERT_EQ(ncclCommCuDevice(comms[r], &dev), ncclSuccess);
      EXPECT_EQ(p.cudaDev, dev);
      EXPECT_EQ(p.cudaDev, r);  // ncclCommInitAll with devlist NULL: devices 0..n-1
      EXPECT_EQ(p.nvmlDev, -1);
      EXPECT_FALSE(p.deviceApiSupport);
      EXPECT_FALSE(p.multimemSupport);
      EXPECT_EQ(p.ginType, NCCL_GIN_TYPE_NONE);
      EXPECT_EQ(p.nLsaTeams, 1);
      EXPECT_FALSE(p.hostRmaSupport);
      EXPECT_EQ(p.railedGinType, NCCL_GIN_TYPE_NONE);
      EXPECT_EQ(p.ginMinStride, 0);
      EXPECT_EQ(p.ginConnectionType, NCCL_GIN_CONNECTION_NONE);
      for (int t = 0; t < 64; ++t) EXPECT_FALSE(p.ginSupport[t]) << "ginSupport[" << t << "]";
      EXPECT_EQ(p.devCommRuntimeVersionSize, 0u);
      EXPECT_FALSE(p.cftSupport);
      EXPECT_FALSE(p.cftMulticastSupport);
      EXPECT_FALSE(p.cftCountedSupport);
      // One communicator, one hash, on every rank.
      EXPECT_NE(p.commHash, 0u);
      if (r == 0) hash0 = p.commHash;
      EXPECT_EQ(p.commHash, hash0) << "rank " << r;
    }
  }
}

// A struct from an older, smaller header: only its `size` bytes are written.
TEST(DeviceApi, QueryPropertiesWritesOnlyTheCallersSize) {
  LocalComms comms(2);
  for (size_t size : {offsetof(ncclCommProperties_t, rank) + 0, offsetof(ncclCommProperties_t, deviceApiSupport),
                      offsetof(ncclCommProperties_t, nLsaTeams) + sizeof(int), sizeof(ncclCommProperties_t) - 1}) {
    ncclCommProperties_t p = freshProperties();
    p.size = size;
    p.version = 22809;
    ASSERT_EQ(ncclCommQueryProperties(comms[1], &p), ncclSuccess)
        << "size " << size << ": " << ncclGetLastError(nullptr);
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(&p);
    for (size_t i = size; i < sizeof(p); ++i) ASSERT_EQ(bytes[i], 0xab) << "byte " << i << " past size " << size;
    if (size > offsetof(ncclCommProperties_t, nRanks)) {
      EXPECT_EQ(p.rank, 1);
      EXPECT_EQ(p.nRanks, 2);
    }
    EXPECT_EQ(p.size, size);
  }
}

TEST(DeviceApi, QueryPropertiesRejectsBadArguments) {
  ncclCommProperties_t p = freshProperties();
  expectInvalidArgument(ncclCommQueryProperties(nullptr, &p), "ncclCommQueryProperties");
  LocalComms comms(1);
  expectInvalidArgument(ncclCommQueryProperties(comms[0], nullptr), "ncclCommQueryProperties", "props is NULL");
  p.magic = 0;
  // NCCL answers a struct that was not made by its initializer with ncclInvalidUsage.
  expectFailure(ncclCommQueryProperties(comms[0], &p), ncclInvalidUsage, "ncclCommQueryProperties", "magic");
  p = freshProperties();
  p.version = 22700;
  expectInvalidArgument(ncclCommQueryProperties(comms[0], &p), "ncclCommQueryProperties", "version");
  p = freshProperties();
  p.size = 8;
  expectInvalidArgument(ncclCommQueryProperties(comms[0], &p), "ncclCommQueryProperties", "size");
  EXPECT_EQ(p.rank, static_cast<int>(0xabababab)) << "a rejected call wrote into props";
}

}  // namespace
}  // namespace accl::abi
