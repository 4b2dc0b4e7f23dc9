// The P2P / SHM decision for GPU pairs (transports/gpu_link.h), without a GPU: facts and
// policies in, link out; NCCL_P2P_LEVEL parsing; and the P2P sharing mode.
#include "transports/gpu_link.h"

#include <gtest/gtest.h>

#include "support/scoped_env.h"
#include "topo/system.h"

namespace accl {
namespace {

GpuPairFacts sameDeviceThreads() {
  GpuPairFacts f;
  f.bothGpuFifos = true;
  f.sameProcess = true;
  f.shareMemory = true;
  f.sameDevice = true;
  f.peerAccess = true;
  f.pathType = kPathLoc;
  return f;
}

GpuPairFacts twoDevicesTwoProcesses(bool peerAccess, int pathType) {
  GpuPairFacts f;
  f.bothGpuFifos = true;
  f.shareMemory = true;
  f.peerAccess = peerAccess;
  f.pathType = pathType;
  return f;
}

TEST(GpuLink, HostBackendPairsAreNotGpuPairs) {
  GpuPairFacts f = sameDeviceThreads();
  f.bothGpuFifos = false;
  EXPECT_EQ(chooseGpuLink(f, GpuLinkPolicy{}), GpuLink::kNone);
}

// Found on the virtual GPU across network-namespace hosts: ranks of different host identities
// (NCCL_HOSTID's virtual nodes) on one machine reached each other through CUDA IPC instead of
// the network. Another node is the network's, whatever the kernel could share.
TEST(GpuLink, OtherNodesUseTheNetworkEvenOnOneMachine) {
  GpuPairFacts f = twoDevicesTwoProcesses(true, kPathNvl);
  f.sameNode = false;
  EXPECT_EQ(chooseGpuLink(f, GpuLinkPolicy{}), GpuLink::kNone);
  GpuPairFacts sameGpu = sameDeviceThreads();
  sameGpu.sameProcess = false;
  sameGpu.sameNode = false;
  EXPECT_EQ(chooseGpuLink(sameGpu, GpuLinkPolicy{}), GpuLink::kNone);
}

TEST(GpuLink, SeveralRanksOnOneDeviceUseP2pEvenWithP2pDisabled) {
  GpuLinkPolicy disabled;
  disabled.p2pDisable = true;
  EXPECT_EQ(chooseGpuLink(sameDeviceThreads(), GpuLinkPolicy{}), GpuLink::kP2p);
  EXPECT_EQ(chooseGpuLink(sameDeviceThreads(), disabled), GpuLink::kP2p);  // LOC <= LOC
  GpuPairFacts processes = sameDeviceThreads();
  processes.sameProcess = false;
  EXPECT_EQ(chooseGpuLink(processes, disabled), GpuLink::kP2p);
}

TEST(GpuLink, PathLevelDecidesBetweenP2pAndShm) {
  GpuLinkPolicy def;
  EXPECT_EQ(chooseGpuLink(twoDevicesTwoProcesses(true, kPathNvl), def), GpuLink::kP2p);
  EXPECT_EQ(chooseGpuLink(twoDevicesTwoProcesses(true, kPathPix), def), GpuLink::kP2p);
  EXPECT_EQ(chooseGpuLink(twoDevicesTwoProcesses(true, kPathPxb), def), GpuLink::kP2p);  // default level PXB
  EXPECT_EQ(chooseGpuLink(twoDevicesTwoProcesses(true, kPathPhb), def), GpuLink::kShm);
  EXPECT_EQ(chooseGpuLink(twoDevicesTwoProcesses(true, kPathSys), def), GpuLink::kShm);
  GpuLinkPolicy sys;
  sys.p2pLevel = kPathSys;
  EXPECT_EQ(chooseGpuLink(twoDevicesTwoProcesses(true, kPathSys), sys), GpuLink::kP2p);
  GpuLinkPolicy nvl;
  nvl.p2pLevel = kPathNvl;
  EXPECT_EQ(chooseGpuLink(twoDevicesTwoProcesses(true, kPathPix), nvl), GpuLink::kShm);
  EXPECT_EQ(chooseGpuLink(twoDevicesTwoProcesses(true, kPathNvl), nvl), GpuLink::kP2p);
  GpuLinkPolicy disabled;
  disabled.p2pDisable = true;
  disabled.p2pLevel = kPathSys;  // NCCL_P2P_DISABLE wins over NCCL_P2P_LEVEL
  EXPECT_EQ(chooseGpuLink(twoDevicesTwoProcesses(true, kPathNvl), disabled), GpuLink::kShm);
}

TEST(GpuLink, NoPeerAccessMeansShmOrNothing) {
  EXPECT_EQ(chooseGpuLink(twoDevicesTwoProcesses(false, -1), GpuLinkPolicy{}), GpuLink::kShm);
  GpuLinkPolicy sys;
  sys.p2pLevel = kPathSys;
  EXPECT_EQ(chooseGpuLink(twoDevicesTwoProcesses(false, kPathSys), sys), GpuLink::kShm);
  GpuLinkPolicy noShm;
  noShm.shmDisable = true;
  EXPECT_EQ(chooseGpuLink(twoDevicesTwoProcesses(false, -1), noShm), GpuLink::kNone);
  EXPECT_EQ(chooseGpuLink(twoDevicesTwoProcesses(true, kPathNvl), noShm), GpuLink::kP2p);
}

TEST(GpuLink, OtherMachinesAreLeftToTheNetwork) {
  GpuPairFacts f = twoDevicesTwoProcesses(true, kPathNvl);
  f.shareMemory = false;
  EXPECT_EQ(chooseGpuLink(f, GpuLinkPolicy{}), GpuLink::kNone);
}

TEST(GpuLink, GuessedPathTypes) {
  EXPECT_EQ(guessPathType(true, true, false), kPathLoc);
  EXPECT_EQ(guessPathType(false, true, true), kPathNvl);
  EXPECT_EQ(guessPathType(false, true, false), kPathPxb);
  EXPECT_EQ(guessPathType(false, false, false), kPathDis);
}

TEST(GpuLink, P2pModes) {
  EXPECT_EQ(chooseP2pMode(true, true), P2pMode::kDirect);
  EXPECT_EQ(chooseP2pMode(true, false), P2pMode::kDirect);
  EXPECT_EQ(chooseP2pMode(false, true), P2pMode::kCumem);
  EXPECT_EQ(chooseP2pMode(false, false), P2pMode::kIpc);
  EXPECT_STREQ(p2pModeName(P2pMode::kCumem), "CUMEM");
  EXPECT_STREQ(p2pModeName(P2pMode::kIpc), "IPC");
  EXPECT_STREQ(p2pModeName(P2pMode::kDirect), "direct pointer");
  EXPECT_STREQ(gpuLinkName(GpuLink::kShm), "SHM");
}

TEST(GpuLink, P2pLevelParsing) {
  int level = -7;
  EXPECT_TRUE(parseP2pLevel("NVL", &level));
  EXPECT_EQ(level, kPathNvl);
  EXPECT_TRUE(parseP2pLevel("pxb", &level));
  EXPECT_EQ(level, kPathPxb);
  EXPECT_TRUE(parseP2pLevel("SYS", &level));
  EXPECT_EQ(level, kPathSys);
  // NCCL's legacy numbers: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and 5 SYS.
  const int legacy[] = {kPathLoc, kPathPix, kPathPxb, kPathPhb, kPathSys, kPathSys};
  for (int i = 0; i <= 5; ++i) {
    EXPECT_TRUE(parseP2pLevel(std::to_string(i), &level)) << i;
    EXPECT_EQ(level, legacy[i]) << i;
  }
  EXPECT_FALSE(parseP2pLevel("FAST", &level));
  EXPECT_FALSE(parseP2pLevel("", &level));
}

TEST(GpuLink, PolicyFromEnvironment) {
  std::string why;
  {
    test::ScopedEnvVar level("NCCL_P2P_LEVEL", "PHB");
    test::ScopedEnvVar disable("NCCL_P2P_DISABLE", "0");
    test::ScopedEnvVar shm("NCCL_SHM_DISABLE", "1");
    GpuLinkPolicy p = gpuLinkPolicyFromEnv(&why);
    EXPECT_EQ(why, "");
    EXPECT_EQ(p.p2pLevel, kPathPhb);
    EXPECT_EQ(p.effectiveLevel(), kPathPhb);
    EXPECT_FALSE(p.p2pDisable);
    EXPECT_TRUE(p.shmDisable);
  }
  {
    test::ScopedEnvVar level("NCCL_P2P_LEVEL", "WARP");
    GpuLinkPolicy p = gpuLinkPolicyFromEnv(&why);
    EXPECT_NE(why.find("NCCL_P2P_LEVEL='WARP'"), std::string::npos) << why;
    EXPECT_EQ(p.effectiveLevel(), kPathPxb);  // the default is kept
  }
  {
    test::ScopedEnvVar disable("NCCL_P2P_DISABLE", "1");
    GpuLinkPolicy p = gpuLinkPolicyFromEnv(&why);
    EXPECT_EQ(p.effectiveLevel(), kPathLoc);
  }
}

}  // namespace
}  // namespace accl
