// Loading libcrypto.so.3 / libssl.so.3 with dlopen and filling the tables of util/openssl_lib.h.
#include "util/openssl_lib.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

namespace accl {
namespace {

template <typename Fn>
bool bind(void* handle, const char* name, Fn* out, std::string* why) {
  void* sym = dlsym(handle, name);
  if (!sym) {
    if (why->empty()) *why = std::string("symbol ") + name + " is missing";
    return false;
  }
  *out = reinterpret_cast<Fn>(sym);
  return true;
}

void* openLib(const char* file, std::string* why) {
  void* h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* err = dlerror();
    *why = std::string("cannot load ") + file + " (OpenSSL 3; Debian package libssl3): " + (err ? err : "?");
  }
  return h;
}

#define ACCL_BIND(lib, h, name) ok = bind(h, #name, &(lib).name, &why) && ok

struct Loaded {
  std::once_flag cryptoOnce, sslOnce;
  CryptoLib crypto{};
  SslLib ssl{};
  bool cryptoOk = false, sslOk = false;
  std::string cryptoWhy, sslWhy;
};

Loaded& loaded() {
  static Loaded* l = new Loaded();  // never freed: function pointers stay valid to the end
  return *l;
}

}  // namespace

const CryptoLib* cryptoLib(const char** whyOut) {
  Loaded& l = loaded();
  std::call_once(l.cryptoOnce, [&l] {
    std::string why;
    void* h = openLib("libcrypto.so.3", &why);
    bool ok = h != nullptr;
    if (ok) {
      ACCL_BIND(l.crypto, h, EVP_sha256);
      ACCL_BIND(l.crypto, h, HMAC);
      ACCL_BIND(l.crypto, h, SHA256);
      ACCL_BIND(l.crypto, h, ERR_get_error);
      ACCL_BIND(l.crypto, h, ERR_error_string_n);
      ACCL_BIND(l.crypto, h, ERR_clear_error);
      ACCL_BIND(l.crypto, h, OPENSSL_cleanse);
      ACCL_BIND(l.crypto, h, BIO_get_new_index);
      ACCL_BIND(l.crypto, h, BIO_meth_new);
      ACCL_BIND(l.crypto, h, BIO_meth_set_write);
      ACCL_BIND(l.crypto, h, BIO_meth_set_read);
      ACCL_BIND(l.crypto, h, BIO_meth_set_ctrl);
      ACCL_BIND(l.crypto, h, BIO_new);
      ACCL_BIND(l.crypto, h, BIO_set_data);
      ACCL_BIND(l.crypto, h, BIO_get_data);
      ACCL_BIND(l.crypto, h, BIO_set_init);
      ACCL_BIND(l.crypto, h, BIO_set_flags);
      ACCL_BIND(l.crypto, h, BIO_clear_flags);
      if (!ok) why = "libcrypto.so.3: " + why;
    }
    l.cryptoOk = ok;
    l.cryptoWhy = why;
  });
  if (whyOut) *whyOut = l.cryptoWhy.c_str();
  return l.cryptoOk ? &l.crypto : nullptr;
}

const SslLib* sslLib(const char** whyOut) {
  Loaded& l = loaded();
  const char* cryptoWhy = nullptr;
  if (!cryptoLib(&cryptoWhy)) {
    if (whyOut) *whyOut = cryptoWhy;
    return nullptr;
  }
  std::call_once(l.sslOnce, [&l] {
    std::string why;
    void* h = openLib("libssl.so.3", &why);
    bool ok = h != nullptr;
    if (ok) {
      ACCL_BIND(l.ssl, h, TLS_method);
      ACCL_BIND(l.ssl, h, SSL_CTX_new);
      ACCL_BIND(l.ssl, h, SSL_CTX_free);
      ACCL_BIND(l.ssl, h, SSL_CTX_ctrl);
      ACCL_BIND(l.ssl, h, SSL_CTX_set_ciphersuites);
      ACCL_BIND(l.ssl, h, SSL_CTX_set_num_tickets);
      ACCL_BIND(l.ssl, h, SSL_CTX_set_options);
      ACCL_BIND(l.ssl, h, SSL_CTX_set_psk_use_session_callback);
      ACCL_BIND(l.ssl, h, SSL_CTX_set_psk_find_session_callback);
      ACCL_BIND(l.ssl, h, SSL_CTX_set_ex_data);
      ACCL_BIND(l.ssl, h, SSL_CTX_get_ex_data);
      ACCL_BIND(l.ssl, h, SSL_get_SSL_CTX);
      ACCL_BIND(l.ssl, h, SSL_SESSION_new);
      ACCL_BIND(l.ssl, h, SSL_SESSION_free);
      ACCL_BIND(l.ssl, h, SSL_SESSION_set1_master_key);
      ACCL_BIND(l.ssl, h, SSL_SESSION_set_cipher);
      ACCL_BIND(l.ssl, h, SSL_SESSION_set_protocol_version);
      ACCL_BIND(l.ssl, h, SSL_CIPHER_find);
      ACCL_BIND(l.ssl, h, SSL_new);
      ACCL_BIND(l.ssl, h, SSL_free);
      ACCL_BIND(l.ssl, h, SSL_set_bio);
      ACCL_BIND(l.ssl, h, SSL_set_connect_state);
      ACCL_BIND(l.ssl, h, SSL_set_accept_state);
      ACCL_BIND(l.ssl, h, SSL_do_handshake);
      ACCL_BIND(l.ssl, h, SSL_read);
      ACCL_BIND(l.ssl, h, SSL_write);
      ACCL_BIND(l.ssl, h, SSL_get_error);
      ACCL_BIND(l.ssl, h, SSL_pending);
      ACCL_BIND(l.ssl, h, SSL_is_init_finished);
      ACCL_BIND(l.ssl, h, SSL_shutdown);
      if (!ok) why = "libssl.so.3: " + why;
    }
    l.sslOk = ok;
    l.sslWhy = why;
  });
  if (whyOut) *whyOut = l.sslWhy.c_str();
  return l.sslOk ? &l.ssl : nullptr;
}

// libcrypto is opened when the library is loaded (every bootstrap needs it), so that a process that
// forks its ranks never runs dlopen in a child whose parent had other threads at the fork. It is
// also used once here, before any thread exists: OpenSSL 3's first HMAC and SHA-256 fetch their
// algorithms into its method store under a write lock, and a process that forks ranks while its
// bootstrap root thread is inside that first call leaves the lock taken in the child, which then
// hangs in its own first HMAC (seen: forked ranks that never answered the root's challenge). Later
// calls find the algorithms cached and take the store's lock for reading only.
//
// OpenSSL's own exit-time cleanup is turned off first (OPENSSL_INIT_NO_ATEXIT): it frees the
// library's globals while threads of ours (a bootstrap root serving a late connection) may still
// be inside HMAC, which crashed such a thread at process exit under ASan. The memory stays for the
// process's end, as accl's other process-wide state does.
__attribute__((constructor)) static void openLibcryptoAtLoad() {
  const CryptoLib* c = cryptoLib(nullptr);
  if (!c) return;  // reported when a bootstrap needs it
  constexpr uint64_t kInitNoAtExit = 0x00080000;  // OPENSSL_INIT_NO_ATEXIT (OpenSSL 3.0+)
  if (void* h = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
    using InitFn = int (*)(uint64_t opts, const void* settings);
    if (auto init = reinterpret_cast<InitFn>(dlsym(h, "OPENSSL_init_crypto"))) (void)init(kInitNoAtExit, nullptr);
    dlclose(h);  // the handle cryptoLib() holds keeps the library loaded
  }
  unsigned char out[32];
  unsigned int len = 0;
  const unsigned char data[1] = {0};
  (void)c->HMAC(c->EVP_sha256(), data, 1, data, 1, out, &len);
  (void)c->SHA256(data, 1, out);
}

void takeOpensslErrors(char* out, size_t bytes) {
  if (bytes == 0) return;
  out[0] = '\0';
  const CryptoLib* c = cryptoLib(nullptr);
  if (!c) return;
  unsigned long e = c->ERR_get_error();
  if (e != 0) c->ERR_error_string_n(e, out, bytes);
  c->ERR_clear_error();
}

}  // namespace accl
