#include "engine/detect/fabric_detectors.h"

#include "engine/detect/fabric_ib.h"
#include "engine/detect/fabric_nvlink.h"
#include "engine/detect/fabric_pcie.h"
#include "engine/detect/fabric_roce.h"

namespace faultline {

std::vector<std::unique_ptr<Detector>> MakeFabricDetectors(const FabricOptions& options, const Topology* topology) {
  std::vector<std::unique_ptr<Detector>> out;
  out.push_back(std::make_unique<PcieFabricDetector>(options, topology));
  out.push_back(std::make_unique<NvlinkFabricDetector>(options, topology));
  out.push_back(std::make_unique<IbFabricDetector>(options, topology));
  RoceOptions roce;
  roce.fabric = options;
  out.push_back(std::make_unique<RoceFabricDetector>(roce, topology));
  return out;
}

}  // namespace faultline
