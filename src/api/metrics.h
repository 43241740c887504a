// Prometheus text exposition (format 0.0.4) of one node for `/metrics` (docs/metrics.md).
//
// Per-layer gauges and counters come from the newest stored observation of each series
// inside a recent window (MetricsOptions::window_ns before the provider's "now"), mapped
// by one table (ObservationMetrics(): kind + attribute filter -> metric name, type, unit
// scale). Counters carry the device's cumulative count as stored. The diagnosis in force
// is `faultline_diagnosis_info`; source health, the agent's blind state
// (`faultline_agent_blind`), store size, the process's CPU and RSS and, from a live agent,
// its remediation worker's counters follow. XID events are counted per GPU and code
// (`faultline_xid_events_total`) over every XID row the store holds, with bounded labels.
//
// Labels: node, component, gpu, uuid, port on readings (values from the node's hardware:
// canonical component ids, GPU index, UUID, link/port number), plus closed enums where a
// metric needs one (reason/bit, class/action/severity, source). A label value that is
// empty, longer than 128 bytes or holds a control byte drops its series; at most
// max_series series are written. Both are counted in faultline_metrics_series_dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/provider.h"
#include "core/status.h"
#include "core/types.h"

namespace faultline::api {

struct MetricsOptions {
  int64_t window_ns = int64_t{15} * 60 * 1'000'000'000;  // 3x the agent's unchanged-series heartbeat
  size_t max_series = 10'000;
  size_t max_rows_per_kind = 20'000;  // newest stored rows read per observation kind
  bool process_metrics = true;        // faultline_process_* of this process
  // faultline_xid_events_total: the newest rows read (per kind: xid, xid_recovery_action),
  // and its label caps: the first GPUs / codes per GPU seen get their own series, the rest
  // count under gpu="other" / xid="other".
  size_t max_xid_rows = 100'000;
  size_t max_xid_gpus = 32;
  size_t max_xid_codes_per_gpu = 8;
};

struct MetricsStats {
  size_t series = 0;
  size_t dropped = 0;  // left out: a bad label value or over max_series
};

// One row of the observation -> metric table.
struct MetricSpec {
  ObsKind kind = ObsKind::kOther;
  std::string_view attr_key;                    // "" = any observation of the kind...
  std::string_view attr_value;                  // ...else only those with attrs[attr_key] == attr_value
  std::string_view absent_attr;                 // "" or: only observations without this attr
  std::optional<ComponentType> component_type;  // only components of this type
  std::string_view name;
  std::string_view type;  // "gauge" or "counter"
  std::string_view help;
  double scale = 1;                // stored unit -> the unit in the name
  std::string_view value_attr;     // "" = the observation's value; else a numeric attr ("max")
  bool clock_reason_bits = false;  // one 0/1 series per known clocks-event-reason bit
};

const std::vector<MetricSpec>& ObservationMetrics();

// NVML clocks-event-reason bits: {mask, reason label}.
struct ClockReasonBit {
  uint64_t mask;
  std::string_view reason;
};
const std::vector<ClockReasonBit>& ClockReasonBits();

// Label value escaping of the text format: \ -> \\, " -> \", newline -> \n.
std::string EscapeLabelValue(std::string_view v);

Result<std::string> RenderMetrics(DataProvider& provider, const MetricsOptions& options = {},
                                  MetricsStats* stats = nullptr);

}  // namespace faultline::api
