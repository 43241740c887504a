// Evidence bundles built from the agent's store (docs/rma-bundle.md):
//  - the RMA bundle (`faultline rma-bundle`) for a failed part (GPU, NVSwitch, NIC, PCIe or
//    NVLink link): summary.md for the vendor's support engineer (part, serial, UUID, PCI
//    id, what failed, since when, evidence), diagnosis.json, the part's counter history
//    (counters.csv), the node's raw kernel lines and BMC/SEL entries around the fault
//    (kernel.log, bmc_sel.log) and what is known of the node (node_facts.json);
//  - the facility ticket (`faultline facility-ticket`) for power, cooling and leak causes,
//    the same shape addressed to facilities: where (rack/PDU/feed/loop when the topology
//    names them), what, since when, the physical readings (readings.csv) and the SEL.
//
// Which diagnosis calls for which document is the remediation policy's word: its action plan
// (policy::PlanActions) proposes rma_bundle or facility_ticket, not refused. This library sits
// below the policy, so a caller that checked the plan says so (BundleOptions::warrant); the
// commands and the policy's actuator do. A caller that did not gets the fault-class guard: a
// GPU RMA is refused for a physical cause (that is a facility ticket) and for a user program, a
// driver fault or no hardware cause; a facility ticket is refused for anything but a physical
// cause (kInvalidArgument, the message saying what to do instead).
//
// The RMA bundle names the part by what the store holds of it: serial, model, board part
// number, UUID, PCI id, VBIOS and driver versions for a GPU; serial, model, part number and
// firmware for a PSU or fan (from the Redfish resource the BMC served). What the store does
// not hold is written "not recorded", never guessed.
// File names in the archive are fixed; text from the store is made one line per record, and
// values after credential-like keys (password, token, secret, authorization, ...) are
// replaced by "[redacted]", so no secret the logs happened to carry ends up in the bundle.
// The store is only read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actions/tar.h"
#include "core/status.h"
#include "core/types.h"

namespace faultline {
class Store;
}

namespace faultline::actions {

enum class BundleKind { kRma, kFacility };

// Which document a fault class calls for.
enum class CauseGroup {
  kPart,         // a part to repair or replace: RMA bundle
  kFacility,     // power, cooling, leak: facility ticket
  kUserProgram,  // the job's own fault: notify the user, never an RMA
  kNotHardware,  // driver/firmware software, workload imbalance, none
};
CauseGroup GroupOf(FaultClass fault_class);

// Who judged that the diagnosis calls for the document.
enum class Warrant {
  kFaultClass,  // nobody: BuildBundle applies the fault-class guard (GroupOf) itself
  kActionPlan,  // the caller checked that policy::PlanActions proposes it, not refused
  kForced,      // an operator asked for it although the plan does not (`--force`): the files say so
};

struct BundleOptions {
  std::optional<int64_t> diagnosis_id;  // unset: the newest eligible diagnosis
  Warrant warrant = Warrant::kFaultClass;
  std::string warrant_note;         // one line on the plan ("rule physical_part_rma"), quoted in the files
  std::optional<std::string> node;  // narrows the search for the newest one
  int64_t window_pad_ns = int64_t{2} * 3600 * 1'000'000'000;  // raw lines: [first - pad, last + pad]
  size_t max_lines = 20'000;                                  // per raw-evidence file (the newest in the window)
  size_t max_counter_rows = 100'000;                          // counter history rows (the newest)
  int64_t now_ns = 0;                                         // "prepared at"
};

struct Bundle {
  BundleKind kind = BundleKind::kRma;
  int64_t diagnosis_id = 0;
  std::string node;
  Diagnosis diagnosis;
  std::vector<TarEntry> files;  // fixed names, in archive order
};

// kNotFound: no diagnosis with that id / no eligible one; kInvalidArgument: the diagnosis'
// cause does not call for this kind of document (the message says what to do instead).
Result<Bundle> BuildBundle(Store& store, BundleKind kind, const BundleOptions& options);

// The bundle as a .tar.gz at `path` (written atomically, mode 0600: it holds node logs).
Status WriteBundle(const Bundle& bundle, const std::string& path, int64_t mtime_ns);

// Replaces the values of credential-like keys in one line of text.
std::string RedactSecrets(std::string_view text);

}  // namespace faultline::actions
