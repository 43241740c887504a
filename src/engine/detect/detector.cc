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

}  // namespace faultline
