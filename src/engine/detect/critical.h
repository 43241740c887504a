// Which observations cannot wait for the agent's evaluate timer (issue 16, "fault to
// diagnosis <= 100 ms"): one that, on its own, already means a GPU, a link, the NVLink
// fabric or the node's power/cooling has failed. The agent's evaluator is woken at once
// when a stored batch holds one (daemon/agent.h); everything else waits for the timer.
//
// Decided here, in the engine, next to the XID/SXid catalogs, so that no source has its
// own idea of "critical". Pure functions of one observation: no state, no I/O.
//
// Critical:
//  - kernel: an XID whose project rule is fatal or that is on the always-critical list
//    (48, 64, 74, 79, 94, 95, 119: the codes a job or a GPU does not survive); "GPU has
//    fallen off the bus"; a fatal SXid (catalog or printed severity); a fatal PCIe AER
//    (Uncorrected (Fatal), Surprise Down, DPC containment, recovery failed);
//  - NVML: a GPU lost / reset required;
//  - Redfish: a leak detector or PSU reading at Critical health, a PSU reported absent,
//    a temperature or coolant reading at Critical health or at/past its own upper
//    critical (or fatal) threshold, and a Critical event (SSE push or event log) whose
//    origin, MessageId or message names a power supply, a leak, a temperature, a thermal
//    trip or coolant.
// Not critical: corrected/non-fatal errors, XID 13/31/43 (programs), warnings, periodic
// readings in range. Being critical says "evaluate now", never what the diagnosis is.
#pragma once

#include "core/types.h"

namespace faultline {

// True when `obs` must be evaluated without waiting for the next evaluate tick.
bool IsCritical(const Observation& obs);

// A PCIe AER line that reports a fatal error: the AER core's "Uncorrected (Fatal)" class,
// a Surprise Down, DPC containment or the core's "recovery failed" verdict. Shared with
// the kernel detector, which makes such an error its own finding on the port.
bool IsFatalAer(const Observation& obs);

// The XIDs critical on their own whatever the catalog's default rule says (94 is
// contained to one program but still kills that job; 74 and 119 stop the GPU).
bool IsCriticalXid(int64_t code);

}  // namespace faultline
