// Envelopes the fleet tests publish: what a node's agent sends (fleet/wire.h).
#pragma once

#include <cstdint>
#include <string>

#include "fleet/wire.h"

namespace faultline::fleet::nats::testing {

// A node's own diagnosis of a power problem (what its isolator stores), row `row_id`, at `t`.
inline Envelope PowerDiagnosisAt(const NodePlace& place, int64_t row_id, int64_t t) {
  constexpr int64_t kSecond = 1'000'000'000;
  Envelope e;
  e.kind = RecordKind::kDiagnosis;
  e.place = place;
  e.row_id = row_id;
  e.msg_id = place.node + "/diagnosis/" + std::to_string(row_id);
  e.sent_ns = t;
  Diagnosis d;
  d.fault_class = FaultClass::kPowerSupply;
  d.layer = Layer::kOob;
  d.component = ComponentRef{ComponentType::kPsu, "1", {}};
  d.action = Action::kRma;
  d.severity = Severity::kCritical;
  d.confidence = 0.9;
  d.first_ns = t;
  d.last_ns = t + 5 * kSecond;
  d.summary = "PSU 1 input lost";
  e.diagnosis = d;
  return e;
}

}  // namespace faultline::fleet::nats::testing
