#include "engine/detect/detector.h"

namespace faultline {

Evidence EvidenceFrom(const Observation& obs) {
  Evidence e;
  e.time_ns = obs.time_ns;
  e.mono_us = obs.mono_us;
  e.source = obs.source;
  e.component = obs.component.Id();
  e.text = obs.raw.empty() ? obs.text : obs.raw;
  e.count = obs.count;
  return e;
}

int64_t SortTimeNs(const Observation& obs) {
  if (obs.time_ns != 0) return obs.time_ns;
  if (obs.mono_us) return *obs.mono_us * 1000;
  return 0;
}

}  // namespace faultline
