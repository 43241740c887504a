// Layer-1 (out-of-band) detectors: power, thermal/cooling, and BMC event logs.
// They read the observations the Redfish and IPMI sources emit (conventions in
// docs/redfish.md) and name physical causes: a PSU, the input feed, the inlet air, a
// fan, a pump, the coolant loop, a leak. Their actions are facility_ticket (power or
// cooling infrastructure) or rma of a PSU/fan part; never a GPU RMA.
//
// Findings stay in Findings() after they clear; a cleared one has attrs["state"] =
// "cleared" and last_ns at the clearing observation, so the isolator can tell a past
// PSU sag that explains an old throttle from a fault that is still present.
#pragma once

#include <memory>
#include <vector>

#include "engine/detect/detector.h"

namespace faultline {

// Every threshold the OOB detectors use, with the default and why.
struct OobOptions {
  // Consumed power at or above this fraction of the capacity that is still available
  // (healthy PSUs) while a PSU is lost means the node cannot power its load.
  double power_near_capacity_fraction = 0.9;
  // PSU input voltage without BMC thresholds: AC wide-range supplies accept 100-240 V
  // +-10%, so outside 90..264 V is out of range...
  double input_voltage_min_v = 90.0;
  double input_voltage_max_v = 264.0;
  // ...and a sag of more than this fraction below the PSU's first reading is a sag.
  double input_voltage_sag_fraction = 0.10;
  // Inlet limit when the sensor has no thresholds: ASHRAE A2 allows up to 35 C.
  double inlet_max_c = 35.0;
  // Readings must fall this far below a threshold before a finding clears (hysteresis).
  double hysteresis_c = 1.0;
  // Coolant return or delta temperature rising by this much within the window.
  double coolant_rise_c = 5.0;
  int64_t coolant_window_ns = 15LL * 60 * 1'000'000'000;
  // Absolute coolant delta (return - supply) above which cooling is degraded.
  double coolant_delta_max_c = 20.0;
  // Evidence kept per finding (the first ones and the latest).
  size_t max_evidence = 16;
};

// PSU state, redundancy, input/rail voltages, power vs capacity.
std::unique_ptr<Detector> MakeOobPowerDetector(const OobOptions& options);
// Inlet temperature, fans, pumps, coolant temperatures and flow, leak detectors.
std::unique_ptr<Detector> MakeOobThermalDetector(const OobOptions& options);
// SEL / Event / Oem log entries, Status.Conditions and SSE events: classified by
// registry MessageId (version ignored) or by IPMI sensor type + entry code, with
// deassertions closing the matching finding.
std::unique_ptr<Detector> MakeOobEventDetector(const OobOptions& options);

// All of the above, for the CLI and the agent.
std::vector<std::unique_ptr<Detector>> MakeOobDetectors(const OobOptions& options = {});

}  // namespace faultline
