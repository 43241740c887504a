// Fuzzes the isolator with arbitrary finding sets: the first byte picks the layers with
// data and whether a slowdown is reported, the rest is a JSON array of Findings (the form
// detectors' output is saved and replayed in). Isolate() must always answer, with
// confidences in [0, 1] and the primary first.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "engine/isolate/isolator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  auto findings = faultline::DecodeJson<std::vector<faultline::Finding>>(
      std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  if (!findings.ok()) return 0;
  faultline::IsolateInput input;
  input.findings = std::move(findings).value();
  constexpr faultline::Layer kLayers[] = {faultline::Layer::kOob, faultline::Layer::kGpu, faultline::Layer::kOs,
                                          faultline::Layer::kFabric, faultline::Layer::kWorkload};
  for (int i = 0; i < 5; ++i) {
    if (flags & (1u << i)) input.layers_with_data.insert(kLayers[i]);
  }
  input.slowdown_reported = (flags & 0x20) != 0;
  if (flags & 0x40) input.symptom_ns = static_cast<int64_t>(flags) << 56;
  const auto diagnoses = faultline::Isolate(input);
  if (diagnoses.empty()) std::abort();
  for (const auto& d : diagnoses) {
    if (!(d.confidence >= 0.0 && d.confidence <= 1.0)) std::abort();
  }
  return 0;
}
