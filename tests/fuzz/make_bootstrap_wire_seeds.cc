// Writes the seed corpus of bootstrap_wire_fuzz (corpus/bootstrap_wire/) from the current wire structs:
// run again after a layout change of the wire structs. Not built by CMake: compile by hand with
//   g++ -std=c++20 -Wno-invalid-offsetof -Isrc -Iinclude -DACCL_NO_CUDA_HEADERS=1 tests/fuzz/make_bootstrap_wire_seeds.cc
// and run it inside tests/fuzz/corpus/bootstrap_wire. The first byte of each file selects the decoder.
#include <arpa/inet.h>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include "core/bootstrap/bootstrap_wire.h"
using namespace accl;
static void put(const std::string& name, int sel, const void* p, size_t n) {
  FILE* f = fopen(name.c_str(), "wb"); fputc(sel, f); fwrite(p, 1, n, f); fclose(f);
}
static void addr(unsigned char* at, int port) {
  sockaddr_in a{}; a.sin_family = AF_INET; a.sin_port = htons(port); a.sin_addr.s_addr = htonl(0x7f000001);
  memset(at, 0, 28); memcpy(at, &a, sizeof(a));
}
int main() {
  alignas(8) unsigned char j[sizeof(JoinRequest)] = {};
  WireHeader h = wireHeader(kJoinRequestKind, sizeof(JoinRequest));
  memcpy(j, &h, sizeof h);
  int32_t v[4] = {1, 4, 1, 0}; memcpy(j + offsetof(JoinRequest, rank), v, 16);
  int64_t t = 120000; memcpy(j + offsetof(JoinRequest, timeoutMs), &t, 8);
  addr(j + offsetof(JoinRequest, listenAddr), 40000);
  put("join_rank1_of4", 0, j, sizeof j);
  put("join_direct", 1, j, sizeof j);
  int32_t v2[4] = {5, 8, 2, 1}; memcpy(j + offsetof(JoinRequest, rank), v2, 16);
  addr(j + offsetof(JoinRequest, root0Addr), 40001);
  put("join_two_roots", 1, j, sizeof j);
  int32_t big[4] = {1, 0x7fffffff, 1, 0}; memcpy(j + offsetof(JoinRequest, rank), big, 16);
  put("join_nranks_intmax", 0, j, sizeof j);
  alignas(8) static unsigned char r[sizeof(RootReport)] = {};
  h = wireHeader(kRootReportKind, sizeof(RootReport)); memcpy(r, &h, sizeof h);
  int32_t rv[4] = {1, 2, 8, 0}; memcpy(r + offsetof(RootReport, rootIndex), rv, 16);
  memcpy(r + offsetof(RootReport, timeoutMs), &t, 8);
  addr(r + offsetof(RootReport, firstRankAddr), 40002);
  strcpy(reinterpret_cast<char*>(r + offsetof(RootReport, message)), "ok");
  put("report_block1", 2, r, sizeof r);
  alignas(8) static unsigned char p[sizeof(JoinReply)] = {};
  h = wireHeader(kJoinReplyKind, sizeof(JoinReply)); memcpy(p, &h, sizeof h);
  addr(p + offsetof(JoinReply, nextAddr), 40003);
  put("reply_ok", 3, p, sizeof p);
  int32_t st = 5; memcpy(p + offsetof(JoinReply, status), &st, 4);
  strcpy(reinterpret_cast<char*>(p + offsetof(JoinReply, message)), "rank 3 never arrived");
  put("reply_failure", 3, p, sizeof p);
  uint32_t hello[2] = {1, 2}; put("hello_ring_rank2", 4 + 8 * 3, hello, 8);
  struct { int32_t tag; uint32_t r; uint64_t b; } mh = {7, 0, 4096}; put("message_header", 5, &mh, 16);
  unsigned char junk[64]; for (int i = 0; i < 64; ++i) junk[i] = i * 37; put("auth_proof_junk", 6, junk, 64);
  put("auth_short", 6, junk, 24);
  const char* http = "GET / HTTP/1.0\r\n\r\n"; put("stranger_http", 0, http, strlen(http));
}
