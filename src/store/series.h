// Periodic series: what the store keeps once per change instead of once per sample.
//
// A periodic reading is an observation of a polled source (nvml, dcgm_exporter, sysfs,
// redfish) of a reading kind (a sensor, counter or state: temperature, ecc_sbe,
// nvlink_crc_flit, psu_state, ...), without a sequence number. Everything else (kernel
// lines, SEL/log entries, Redfish events, workload reports, one-off kinds such as xid or
// gpu_lost) is an event and is never a series.
//
// A series is (node, source, component, kind, and the attrs that name a series rather
// than describe a reading: the ECC counter and location, the retired-page cause, the
// temperature sensor, the clock, the AER error and severity, the Redfish rail/role/units
// ...; the table is in series.cc). A name missing from that table costs compression,
// never data: the readings it separates then differ in content and are all stored.
//
// The store keeps, per series, its current point (the newest stored row) and the last
// time the series was read with that content (store.h, "seen" readings); the agent's
// change filter (daemon/change_filter.h) decides which readings are news.
#pragma once

#include <string>

#include "core/types.h"

namespace faultline::store {

inline constexpr size_t kSeriesIdBytes = 16;

// Whether `obs` is a periodic reading (see above).
bool IsPeriodicReading(const Observation& obs);
// The series `obs` belongs to, as readable text (fields separated by 0x1f); empty for an
// observation that is not a periodic reading.
std::string SeriesKey(const Observation& obs);
// kSeriesIdBytes raw bytes identifying the series of `obs` in the store (the first bytes
// of SHA-256 over SeriesKey: stable across builds, it lives in the file); empty for an
// observation that is not a periodic reading.
std::string SeriesId(const Observation& obs);

}  // namespace faultline::store
