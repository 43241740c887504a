// ApplyBodyFault (mock_bmc_impl.h): the broken answers a flaky BMC gives to a GET.
#include <algorithm>
#include <memory>
#include <string>

#include "sim/mock_bmc/mock_bmc_impl.h"

namespace faultline::sim {
namespace {

constexpr size_t kChunk = 64 * 1024;

// A valid JSON document of exactly `total` bytes, produced chunk by chunk from its offset
// so a 100 MB answer never exists in memory: {"Padding":"xxxx...x"}.
void StreamPadding(httplib::Response& res, uint64_t total) {
  static constexpr std::string_view kHead = "{\"Padding\":\"";
  static constexpr std::string_view kTail = "\"}";
  total = std::max<uint64_t>(total, kHead.size() + kTail.size());
  res.set_content_provider(static_cast<size_t>(total), "application/json",
                           [total](size_t offset, size_t length, httplib::DataSink& sink) {
                             std::string chunk(std::min(length, kChunk), 'x');
                             for (size_t i = 0; i < chunk.size(); ++i) {
                               const uint64_t p = offset + i;
                               if (p < kHead.size())
                                 chunk[i] = kHead[p];
                               else if (p >= total - kTail.size())
                                 chunk[i] = kTail[p - (total - kTail.size())];
                             }
                             return sink.write(chunk.data(), chunk.size());
                           });
}

// Promises the whole body in Content-Length, sends the first half, then fails the provider
// so the server drops the connection mid-body.
void Truncate(httplib::Response& res) {
  auto full = std::make_shared<std::string>(std::move(res.body));
  res.body.clear();
  const std::string type =
      res.get_header_value("Content-Type").empty() ? "application/json" : res.get_header_value("Content-Type");
  res.set_content_provider(full->size(), type, [full](size_t offset, size_t, httplib::DataSink& sink) {
    const size_t half = full->size() / 2;
    if (offset < half) sink.write(full->data() + offset, half - offset);
    return false;
  });
}

}  // namespace

void ApplyBodyFault(const Fault& fault, httplib::Response& res) {
  // Only a complete 200 answer has a body to break (not an error, not the SSE stream).
  if (res.status != 200 || res.content_provider_) return;
  switch (fault.kind) {
    case FaultKind::kMalformedJson:
      // The first half of the real document followed by bytes no JSON value can contain.
      res.body = res.body.substr(0, res.body.size() / 2) + "{[,\x01";
      return;
    case FaultKind::kTruncatedBody:
      Truncate(res);
      return;
    case FaultKind::kHugeBody:
      res.body.clear();
      StreamPadding(res, fault.body_bytes);
      return;
    default:
      return;
  }
}

}  // namespace faultline::sim
