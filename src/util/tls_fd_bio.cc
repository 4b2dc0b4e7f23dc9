// The fd BIO (see tls_fd_bio.h).
#include "util/tls_fd_bio.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <mutex>

namespace accl {
namespace {

// The fd BIO: ::recv / ::send(MSG_NOSIGNAL) on the non-blocking fd, "retry" on EAGAIN.
const CryptoLib* gBioLib = nullptr;

int fdOf(OsslBio* b) { return static_cast<int>(reinterpret_cast<intptr_t>(gBioLib->BIO_get_data(b))); }

int bioWrite(OsslBio* b, const char* data, int bytes) {
  gBioLib->BIO_clear_flags(b, ossl::kBioFlagsRws | ossl::kBioFlagShouldRetry);
  ssize_t n = ::send(fdOf(b), data, static_cast<size_t>(bytes), MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    gBioLib->BIO_set_flags(b, ossl::kBioFlagWrite | ossl::kBioFlagShouldRetry);
  return static_cast<int>(n);
}

int bioRead(OsslBio* b, char* data, int bytes) {
  gBioLib->BIO_clear_flags(b, ossl::kBioFlagsRws | ossl::kBioFlagShouldRetry);
  ssize_t n = ::recv(fdOf(b), data, static_cast<size_t>(bytes), MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    gBioLib->BIO_set_flags(b, ossl::kBioFlagRead | ossl::kBioFlagShouldRetry);
  return static_cast<int>(n);
}

long bioCtrl(OsslBio*, int cmd, long, void*) { return cmd == ossl::kBioCtrlFlush ? 1 : 0; }

}  // namespace

OsslBio* newFdBio(int fd) {
  static std::once_flag once;
  static OsslBioMethod* method = nullptr;
  std::call_once(once, [] {
    gBioLib = cryptoLib(nullptr);
    if (!gBioLib) return;
    method = gBioLib->BIO_meth_new(gBioLib->BIO_get_new_index() | ossl::kBioTypeSourceSink, "accl-fd");
    if (!method) return;
    gBioLib->BIO_meth_set_write(method, bioWrite);
    gBioLib->BIO_meth_set_read(method, bioRead);
    gBioLib->BIO_meth_set_ctrl(method, bioCtrl);
  });
  if (!method) return nullptr;
  OsslBio* b = gBioLib->BIO_new(method);
  if (!b) return nullptr;
  gBioLib->BIO_set_data(b, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  gBioLib->BIO_set_init(b, 1);
  return b;
}

}  // namespace accl
