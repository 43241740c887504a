// Component identity for the isolator (DESIGN.md "Time and identity"). Findings from
// four layers name the same part differently: the kernel log says gpu/0000:3b:00.0, NVML
// says gpu/3 with uuid/serial/bdf keys, sysfs says pcie/0000:3b:00.0. These helpers turn
// a ComponentRef into comparable identity tokens ("bdf:0000:3b:00.0", "uuid:GPU-..",
// "gpu:3") so two references can be matched by any key they share. A key that is absent
// never matches anything: unresolved identities stay apart rather than being guessed.
#pragma once

#include <set>
#include <string>

#include "core/types.h"

namespace faultline::isolate {

// Tokens naming what the component *is*: its canonical id plus its identity keys
// (index, uuid, serial, bdf, slot, ...). BDFs are normalized, so "00000000:3B:00.0"
// and "0000:3b:00.0" give the same token.
std::set<std::string> IdentityTokens(const ComponentRef& ref);

// IdentityTokens plus what the component is attached to: an NVLink's GPU and switch, a
// PCIe port's downstream device, a GPU's upstream port. Used for "this link belongs to
// that GPU".
std::set<std::string> AttachTokens(const ComponentRef& ref);

// Both token sets of one component, computed once (matching is pairwise, so the
// isolator keeps these per node rather than rebuilding them for every comparison).
struct ComponentTokens {
  ComponentType type = ComponentType::kHost;
  std::set<std::string> identity;
  std::set<std::string> attach;
};
ComponentTokens TokensOf(const ComponentRef& ref);
// Adds `from`'s tokens: a merged node is every identity its findings used.
void MergeTokens(ComponentTokens& into, const ComponentTokens& from);

// Same part: same component type and at least one shared identity token.
bool SameComponent(const ComponentRef& a, const ComponentRef& b);
bool SameComponent(const ComponentTokens& a, const ComponentTokens& b);

// Physically connected (or the same): what one side is (identity) is among what the
// other is attached to. Reads the attach keys listed in docs/isolator.md and the fabric
// detector's "upstream" chain key ("<root port>><bridge>>...").
bool Attached(const ComponentRef& a, const ComponentRef& b);
bool Attached(const ComponentTokens& a, const ComponentTokens& b);

// False when both carry a scoping key (cooling loop, power domain) with different values:
// a fan on loop A does not explain a GPU on loop B. True when either side is unscoped.
bool SameScope(const ComponentRef& a, const ComponentRef& b);
// A coolant loop or connector (coolant/<loop>), as opposed to a part on it (pump-, leak-).
bool IsCoolantLoop(const ComponentRef& ref);

// `into` with the keys of `from` added where `into` lacks them (never overwritten).
void MergeKeys(ComponentRef& into, const ComponentRef& from);

}  // namespace faultline::isolate
