// Host-side declarations of NCCL's device-API entry points (nccl_device/host.h, 2.28-2.32), as a
// client of those headers sees them. Handle and requirement types stay incomplete; struct
// ncclTeam, struct ncclMultimemHandle, ncclCommProperties_t, ncclCftLeId and the enums
// ncclCftTeamMode_t must be defined (or come from NVIDIA's headers) by the includer.
// device_api_nvidia_check.cc compiles these against NVIDIA's headers, where any signature
// difference is a "conflicting declaration" error.
#pragma once

extern "C" {
struct ncclDevComm;
struct ncclDevCommRequirements;
struct ncclDevResourceRequirements;
struct ncclLsaBarrierHandle;
struct ncclGinBarrierHandle;
struct ncclLLA2AHandle;
struct ncclGinOutboxHandle;
struct ncclGinInboxA2AHandle;
struct ncclTeam;
struct ncclMultimemHandle;

// 2.28
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const struct ncclDevCommRequirements* reqs,
                               struct ncclDevComm* outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const struct ncclDevComm* devComm);
ncclResult_t ncclLsaBarrierCreateRequirement(struct ncclTeam team, int nBarriers,
                                             struct ncclLsaBarrierHandle* outHandle,
                                             struct ncclDevResourceRequirements* outReq);
ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, struct ncclTeam team, int nBarriers,
                                             struct ncclGinBarrierHandle* outHandle,
                                             struct ncclDevResourceRequirements* outReq);
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize);
ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, struct ncclLLA2AHandle* outHandle,
                                        struct ncclDevResourceRequirements* outReq);
struct ncclTeam ncclTeamWorld(ncclComm_t comm);
struct ncclTeam ncclTeamLsa(ncclComm_t comm);
struct ncclTeam ncclTeamRail(ncclComm_t comm);
int ncclTeamRankToWorld(ncclComm_t comm, struct ncclTeam team, int rank);
int ncclTeamRankToLsa(ncclComm_t comm, struct ncclTeam team, int rank);

// Added up to 2.32
ncclResult_t ncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t* props);
ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void** outPtr);
ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset, struct ncclMultimemHandle multimem,
                                          void** outPtr);
ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank, void** outPtr);
ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void** outPtr);
ncclResult_t ncclGetMultimemDeviceLeInfo(ncclWindow_t window, size_t offset, ncclCftLeId* leId, size_t* leOffset);
ncclResult_t ncclGetCftDeviceLeInfo(ncclWindow_t window, size_t offset, int peerCft, struct ncclTeam cftTeam,
                                    ncclCftLeId* leId, size_t* leOffset);
ncclResult_t ncclGetPeerDeviceLeInfo(ncclWindow_t window, size_t offset, int peerWorld, ncclCftLeId* leId,
                                     size_t* leOffset);
struct ncclTeam ncclTeamCft(ncclComm_t comm, ncclCftTeamMode_t mode);
struct ncclTeam ncclTeamCftMultimem(ncclComm_t comm);
// NVIDIA's Linux package declares these two only in a header it does not ship (its host.h has
// them under NCCL_OS_WINDOWS); the library exports them with these signatures.
ncclResult_t ncclGinOutboxCreateRequirement(int nBlocks, int size_log2, struct ncclGinOutboxHandle* outHandle,
                                            struct ncclDevResourceRequirements* outReq);
ncclResult_t ncclGinInboxA2ACreateRequirement(struct ncclTeam peers, int nBlocks, int size_log2,
                                              struct ncclGinInboxA2AHandle* outHandle,
                                              struct ncclDevResourceRequirements* outReq);
}
