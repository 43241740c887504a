// libFuzzer target for the kubeconfig reader: any bytes must parse or fail with
// kInvalidArgument / kCorrupt, never crash; an accepted config names a server and a token
// source or a client certificate with its key.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "actions/kube_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;  // kubeconfigs are small; deep inputs only slow the fuzzer
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = faultline::actions::ParseKubeconfig(text, "/etc/kube");
  if (!config.ok()) {
    const auto code = config.status().code();
    if (code != faultline::StatusCode::kInvalidArgument && code != faultline::StatusCode::kCorrupt) std::abort();
    return 0;
  }
  if (config->server.empty() || (!config->HasToken() && !config->HasClientCert())) std::abort();
  // A client certificate never comes without its key.
  const bool key = !config->client_key_file.empty() || !config->client_key_pem.empty();
  if (config->HasClientCert() != key) std::abort();
  return 0;
}
