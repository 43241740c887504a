// How the node's one GPU inventory is filled and read (DESIGN.md "Identity"). Every
// path that runs the detectors (agent, offline `diagnose`, why-slow) keeps one
// Inventory, teaches it every observation with LearnGpuIdentity before the detectors
// see it, hands it to the detectors that resolve bus ids (the kernel detector) and to
// BuildIsolateInput, which names every GPU with CanonicalGpu. So a kernel-log bus id,
// an NVML index and a dcgm-exporter UUID of one GPU end up as one component.
//
// What teaches the inventory: a GPU component that carries at least two identity keys
// (NVML's and dcgm-exporter's readings: index, uuid, serial, bdf), and gpu_identity
// observations of any source (NVML's identity reading; the kernel boot log's "NVRM: GPU
// 0000:xx:00.0: GPU-<uuid>" and "GPU at PCI:... / Board Serial Number" lines, whose
// component is the bus id and whose attrs carry uuid / serial). One key alone joins
// nothing and is not learned. Unresolved keys stay as seen, never guessed.
//
// Pure functions; the caller owns the Inventory (not thread-safe, like the detectors).
#pragma once

#include <cstddef>

#include "core/inventory.h"
#include "core/types.h"

namespace faultline {

// GPUs one inventory holds at most: a node has 4-16. A log naming thousands of bus ids
// (hostile or corrupt input) cannot grow it; identities beyond the cap are not learned.
inline constexpr size_t kMaxInventoryGpus = 256;

// Teaches `inventory` what `obs` says about a GPU's identity. Returns true when the
// inventory changed (a new GPU, or a new key for a known one).
bool LearnGpuIdentity(const Observation& obs, Inventory& inventory);

// The inventory's canonical reference for a GPU: "gpu/<index>" when the index is known,
// else "gpu/<uuid>", else "gpu/<bdf>", with every key the inventory knows plus the
// reference's own other keys. `ref` is matched by its bdf / uuid / serial / index keys
// or by a name that is a bus id, a UUID or an index. Anything else (another component
// type, a GPU the inventory does not know) is returned unchanged.
ComponentRef CanonicalGpu(const Inventory& inventory, const ComponentRef& ref);

}  // namespace faultline
