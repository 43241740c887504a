// What a BMC temperature sensor measures, for the OOB detectors: the chassis air intake
// (the only "inlet" the thermal_inlet rule and facility tickets are about), a part's own
// sensor (a PSU's inlet, a CPU die / DTS, a GPU, a DIMM, a regulator), or something else.
//
// Vendors put sensors in the wrong PhysicalContext and name PSU sensors "PSU1 Inlet Temp",
// so both the PhysicalContext and the name are read, and a part wins over "inlet":
//  - a part context (PowerSupply, CPU, GPU, Memory, VoltageRegulator, ...) or a name
//    that names a part (PSU/PS<n>, CPU, DTS, die, core, GPU, DIMM, VR, ...) -> kPart;
//  - else PhysicalContext "Intake", or a name with Inlet/Intake/Ambient -> kInlet;
//  - else kOther.
// Pure functions; no state.
#pragma once

#include <string_view>

#include "core/types.h"

namespace faultline {

enum class TempSite { kInlet, kPart, kOther };

// From the observation's attrs (physical_context, device_name) and component name.
TempSite ClassifyTemperature(const Observation& obs);
// From a free text (a sensor name, message args, a message): the same name rules.
TempSite ClassifySensorText(std::string_view text);

}  // namespace faultline
