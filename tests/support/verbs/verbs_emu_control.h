// Control API of the verbs emulator (libaccl-verbs-emu.so), for tests. The emulator also reads
// these environment variables (it is test support, not part of libnccl, so they are not in
// src/util/param_list.h):
//   ACCL_VERBS_EMU_IFNAME     comma list of IP interfaces; one emulated device emu<i> per entry (an
//                             interface may repeat). Unset: the first up non-loopback IPv4
//                             interface, else lo.
//   ACCL_VERBS_EMU_PORT_DOWN  1: every port reports IBV_PORT_DOWN.
//   ACCL_VERBS_EMU_RETRY_MS   requester retry budget in ms (unset: 4.096 us x 2^timeout x
//                             (retry_cnt + 1) x ACCL_VERBS_EMU_TIME_SCALE, at least 1000 ms).
//   ACCL_VERBS_EMU_TIME_SCALE scale of the computed retry budget (default 0.25).
//   ACCL_VERBS_EMU_FAULT      fault spec, comma list of:
//                               qp_error_after:N  the send work request after N more moves its QP
//                                                 to the error state (one shot);
//                               rkey_mismatch:N   the RDMA write carrying data after N more uses
//                                                 a wrong rkey (one shot): IBV_WC_REM_ACCESS_ERR;
//                               drop_cq:N         the completion after N more is lost (one shot);
//                               delay_cq:MS       every completion becomes visible MS ms late.
//   ACCL_VERBS_EMU_FAULT_FILE a file holding a fault spec; re-read whenever it changes (lets a
//                             test inject a fault into another running process).
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// Replaces the current fault spec (counters restart); "" clears every fault. Returns 0, or -1
// when the spec does not parse (nothing changes then).
int accl_verbs_emu_set_fault(const char* spec);

#ifdef __cplusplus
}
#endif
