// GenerateSelfSignedCert (declared in mock_bmc.h): an EC P-256 key and a self-signed
// X.509 v3 certificate made with the OpenSSL 3 API at test time, so no key is committed.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <string>

#include "sim/mock_bmc/mock_bmc.h"

namespace faultline::sim {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
struct FileClose {
  void operator()(FILE* f) const { fclose(f); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
using CertPtr = std::unique_ptr<X509, CertFree>;
using FilePtr = std::unique_ptr<FILE, FileClose>;

Status SslError(const std::string& what) { return Status(StatusCode::kInternal, "openssl: " + what); }

bool AddExtension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

Result<CertPtr> MakeCert(EVP_PKEY* key, int valid_days) {
  CertPtr cert(X509_new());
  if (!cert) return SslError("X509_new");
  X509_set_version(cert.get(), 2);  // v3
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);  // tolerate small clock skew
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400L * valid_days);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("faultline mock BMC"), -1,
                             -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  // CA:TRUE so the certificate can be its own trust anchor (a client's --ca FILE).
  if (!AddExtension(cert.get(), NID_basic_constraints, "critical,CA:TRUE") ||
      !AddExtension(cert.get(), NID_key_usage, "critical,digitalSignature,keyCertSign") ||
      !AddExtension(cert.get(), NID_ext_key_usage, "serverAuth") ||
      !AddExtension(cert.get(), NID_subject_key_identifier, "hash") ||
      !AddExtension(cert.get(), NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1")) {
    return SslError("adding X509v3 extensions");
  }
  if (X509_sign(cert.get(), key, EVP_sha256()) == 0) return SslError("X509_sign");
  return cert;
}

}  // namespace

Result<CertPaths> GenerateSelfSignedCert(const std::string& dir, int valid_days) {
  if (valid_days <= 0) return Status(StatusCode::kInvalidArgument, "valid_days must be positive");
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return SslError("EVP_EC_gen(P-256)");
  Result<CertPtr> cert = MakeCert(key.get(), valid_days);
  if (!cert.ok()) return cert.status();

  CertPaths paths{dir + "/cert.pem", dir + "/key.pem"};
  // The key file is created 0600 before anything is written to it.
  const mode_t old_mask = umask(077);
  FilePtr key_file(fopen(paths.key_path.c_str(), "wb"));
  umask(old_mask);
  if (!key_file) return Status(StatusCode::kIoError, "cannot write " + paths.key_path);
  if (PEM_write_PrivateKey(key_file.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return SslError("writing the private key");
  }
  FilePtr cert_file(fopen(paths.cert_path.c_str(), "wb"));
  if (!cert_file) return Status(StatusCode::kIoError, "cannot write " + paths.cert_path);
  if (PEM_write_X509(cert_file.get(), cert->get()) != 1) return SslError("writing the certificate");
  return paths;
}

}  // namespace faultline::sim
