// The RMA bundle and the facility ticket behind the Actuator interface (actuator.h): the
// policy's rma_bundle / facility_ticket decisions write the same .tar.gz that
// `faultline rma-bundle` / `faultline facility-ticket` write (bundle.h), into a directory
// the vendor/facilities hand-off picks up (docs/remediation.md "RMA bundle and facility
// ticket").
//
// Contract:
//  - The file is <dir>/<BundleFileName(decision)>: the decision key made file-name safe
//    plus a hash of the whole key, so one decision is one file and two decisions never
//    share one. Written atomically (temporary file, fsync, rename), mode 0600; `dir` is
//    created (0700) when missing.
//  - Observe: the file exists and is a complete gzip'd tar (the gzip CRC and length check,
//    the tar's end-of-archive blocks) -> kInEffect; absent -> kNotInEffect; present but
//    damaged (a disk filled up, someone truncated it) -> kNotInEffect, and Apply replaces it.
//  - Apply builds the bundle from the store for the decision's diagnosis id, warranted by
//    the action plan the decision came from (a PSU's RMA, a cable fault's facility ticket).
//    A cause no plan may send the document for (a GPU RMA for a power fault, anything for a
//    user program) is kInvalidArgument from BuildBundle's hard floor: a bug guard, stored as
//    failed, never a silent wrong bundle.
//  - The store is only read; never logs.
#pragma once

#include <cstdint>
#include <string>

#include "actions/actuator.h"
#include "core/clock.h"

namespace faultline {
class Store;
}

namespace faultline::actions {

struct BundleActuatorOptions {
  std::string dir = "/var/lib/faultline/bundles";
  int64_t window_pad_ns = int64_t{2} * 3600 * 1'000'000'000;  // raw lines around the fault
  const Clock* clock = nullptr;                               // null = the system clock
};

// DecisionFileName(decision.key, ".tar.gz").
std::string BundleFileName(const Decision& decision);

// OK when `path` is a complete .tar.gz (at most `max_bytes` uncompressed); kNotFound when
// absent; kCorrupt with the reason otherwise.
Status CheckTarGz(const std::string& path, size_t max_bytes = size_t{1} << 30);

class BundleActuator final : public Actuator {
 public:
  BundleActuator(Store& store, BundleActuatorOptions options = {});

  bool Handles(ActionClass c) const override;
  Status Apply(const Decision& decision) override;
  Result<Observed> Observe(const Decision& decision) override;

  std::string PathFor(const Decision& decision) const;

 private:
  Store& store_;
  BundleActuatorOptions options_;
  SystemClock system_clock_;
};

}  // namespace faultline::actions
