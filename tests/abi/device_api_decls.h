// Host-side declarations of NCCL 2.28's device-API entry points, as a client of nccl_device.h
// sees them. Handle and requirement types stay incomplete; struct ncclTeam must be defined (or
// come from NVIDIA's headers) by the includer. device_api_nvidia_check.cc compiles these against
// NVIDIA's headers, where any signature difference is a "conflicting declaration" error.
#pragma once

extern "C" {
struct ncclDevComm;
struct ncclDevCommRequirements;
struct ncclDevResourceRequirements;
struct ncclLsaBarrierHandle;
struct ncclGinBarrierHandle;
struct ncclLLA2AHandle;
struct ncclTeam;

ncclResult_t ncclDevCommCreate(ncclComm_t comm, const struct ncclDevCommRequirements* reqs,
                               struct ncclDevComm* outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const struct ncclDevComm* devComm);
ncclResult_t ncclLsaBarrierCreateRequirement(struct ncclTeam team, int nBarriers, struct ncclLsaBarrierHandle* outHandle,
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
}
