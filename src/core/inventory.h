// The node's identity join (DESIGN.md "Time and identity"): the same GPU is a PCI bus
// id in the kernel log, an index/UUID/serial in NVML, a sysfs path, a Redfish
// Processor. The inventory merges whatever keys each source knows and resolves any one
// key to the canonical component. An unresolved key stays as seen, never guessed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/types.h"

namespace faultline {

struct GpuIdentity {
  std::optional<int> index;
  std::string uuid;    // "GPU-5f1b..."
  std::string serial;  // board serial
  std::string bdf;     // normalized "0000:b5:00.0"
  std::string name;    // product name, when known
};

// Normalizes a PCI address as printed by the kernel, NVML or nvidia-smi:
// "0000:b5:00", "00000000:B5:00.0", "b5:00.0" -> "0000:b5:00.0". Returns "" if not a BDF.
std::string NormalizeBdf(std::string_view text);

class Inventory {
 public:
  // Adds or merges a GPU; entries that share any key (bdf, uuid, serial, index) merge.
  void AddGpu(const GpuIdentity& gpu);
  const std::vector<GpuIdentity>& gpus() const { return gpus_; }

  std::optional<GpuIdentity> FindByBdf(std::string_view bdf) const;
  std::optional<GpuIdentity> FindByUuid(std::string_view uuid) const;
  std::optional<GpuIdentity> FindByIndex(int index) const;

  // The canonical component for a GPU seen at `bdf`: "gpu/<index>" when the index is
  // known, else "gpu/<uuid>", else "gpu/<bdf>"; keys carry every known identity key.
  ComponentRef GpuAt(std::string_view bdf) const;

  // Loads a GPU map file: {"gpus":[{"index":0,"uuid":"GPU-..","serial":"..","pci_bus_id":".."}]}
  // (also accepts a bare array, and "bdf"/"pci" for the bus id).
  static Result<Inventory> LoadGpuMap(const std::string& path);

 private:
  std::vector<GpuIdentity> gpus_;
};

// Fills ref.keys with the identity keys of `gpu`.
void AttachGpuKeys(const GpuIdentity& gpu, ComponentRef& ref);

}  // namespace faultline
