// What the acclTest net plugin (accl_test_net.cc, ABI v10 and later) reports through the profiler
// callback, for the tests that check it arrives: for every request it posts, one NetPlugin event
// started with kTestNetProfId and kTestNetStartData under the request's profiler handle, one
// update carrying kTestNetUpdateData, and the stop when test() finds the request done (or the
// comm closes). The data values are markers, never dereferenced.
#pragma once

#include <cstdint>

namespace accl::testnet {

constexpr int64_t kTestNetProfId = (int64_t{0xacc1} << 16) | 1;  // plugin type 0xacc1, event version 1
constexpr uintptr_t kTestNetStartData = 0x57a47;
constexpr uintptr_t kTestNetUpdateData = 0x0bda7e;

}  // namespace accl::testnet
