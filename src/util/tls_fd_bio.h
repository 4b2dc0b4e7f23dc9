// An OpenSSL BIO over a non-blocking socket fd, accl's own instead of OpenSSL's socket BIO so that
// writes pass MSG_NOSIGNAL (a closed peer is EPIPE, never SIGPIPE in the application) and would-block
// reads and writes ask OpenSSL to retry (SSL_ERROR_WANT_READ / WANT_WRITE).
#pragma once

#include "util/openssl_lib.h"

namespace accl {

// A BIO on `fd` (not owned: the caller closes the fd), or null when libcrypto is missing.
OsslBio* newFdBio(int fd);

}  // namespace accl
