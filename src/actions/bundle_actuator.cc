#include "actions/bundle_actuator.h"

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "actions/bundle.h"

namespace faultline::actions {
namespace {

constexpr size_t kTarBlock = 512;

// Counts the zero bytes at the end of everything seen so far.
struct TrailingZeros {
  size_t count = 0;
  void Feed(const unsigned char* data, size_t n) {
    size_t i = n;
    while (i > 0 && data[i - 1] == 0) --i;
    count = i == 0 ? count + n : n - i;
  }
};

}  // namespace

std::string BundleFileName(const Decision& d) { return DecisionFileName(d.key, ".tar.gz"); }

Status CheckTarGz(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Status(StatusCode::kNotFound, "no bundle at " + path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kCorrupt, "cannot read " + path);
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return Status(StatusCode::kInternal, "zlib init failed");
  std::vector<unsigned char> input(64 << 10);
  std::vector<unsigned char> output(256 << 10);
  size_t total = 0;
  TrailingZeros zeros;
  int rc = Z_OK;
  bool trailing_garbage = false;
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0) {
      in.read(reinterpret_cast<char*>(input.data()), static_cast<std::streamsize>(input.size()));
      z.avail_in = static_cast<uInt>(in.gcount());
      z.next_in = input.data();
      if (z.avail_in == 0) break;  // the file ended before the gzip stream did
    }
    z.next_out = output.data();
    z.avail_out = static_cast<uInt>(output.size());
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    const size_t produced = output.size() - z.avail_out;
    zeros.Feed(output.data(), produced);
    total += produced;
    if (total > max_bytes) {
      inflateEnd(&z);
      return Status(StatusCode::kCorrupt, path + ": more than " + std::to_string(max_bytes) + " bytes unpacked");
    }
  }
  if (rc == Z_STREAM_END) trailing_garbage = z.avail_in > 0 || in.peek() != std::char_traits<char>::eof();
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return Status(StatusCode::kCorrupt, path + ": gzip stream is cut short or damaged");
  if (trailing_garbage) return Status(StatusCode::kCorrupt, path + ": bytes after the gzip stream");
  if (total == 0 || total % kTarBlock != 0 || zeros.count < 2 * kTarBlock) {
    return Status(StatusCode::kCorrupt, path + ": not a complete tar archive");
  }
  return Status::Ok();
}

BundleActuator::BundleActuator(Store& store, BundleActuatorOptions options)
    : store_(store), options_(std::move(options)) {}

bool BundleActuator::Handles(ActionClass c) const {
  return c == ActionClass::kRmaBundle || c == ActionClass::kFacilityTicket;
}

std::string BundleActuator::PathFor(const Decision& d) const {
  return (std::filesystem::path(options_.dir) / BundleFileName(d)).string();
}

Result<Observed> BundleActuator::Observe(const Decision& d) {
  Status s = CheckTarGz(PathFor(d));
  if (s.ok()) return Observed::kInEffect;
  if (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kCorrupt) return Observed::kNotInEffect;
  return s;
}

Status BundleActuator::Apply(const Decision& d) {
  if (!Handles(d.action_class)) {
    return Status(StatusCode::kUnsupported, "bundle actuator cannot " + std::string(ToString(d.action_class)));
  }
  auto before = Observe(d);
  if (!before.ok()) return before.status();
  if (*before == Observed::kInEffect) return Status::Ok();
  const Clock& clock = options_.clock != nullptr ? *options_.clock : system_clock_;
  BundleOptions bo;
  bo.diagnosis_id = d.diagnosis_id;
  // The decision is the policy's plan for this diagnosis (policy::PlanActions): it, not the
  // fault class, says which document; BuildBundle still holds the hard floor.
  bo.warrant = Warrant::kActionPlan;
  bo.warrant_note = d.rule.empty() ? "" : "rule " + d.rule;
  bo.window_pad_ns = options_.window_pad_ns;
  bo.now_ns = clock.NowNs();
  const BundleKind kind = d.action_class == ActionClass::kRmaBundle ? BundleKind::kRma : BundleKind::kFacility;
  auto bundle = BuildBundle(store_, kind, bo);
  if (!bundle.ok()) return bundle.status();
  std::error_code ec;
  const bool created = std::filesystem::create_directories(options_.dir, ec);
  if (ec) return Status(StatusCode::kIoError, "cannot create bundle directory " + options_.dir + ": " + ec.message());
  // Bundles hold node logs: a directory we create is the agent's alone. One the operator
  // made keeps its mode (a hand-off process may read it).
  if (created) std::filesystem::permissions(options_.dir, std::filesystem::perms::owner_all, ec);
  const std::string path = PathFor(d);
  if (Status s = WriteBundle(*bundle, path, bo.now_ns); !s.ok()) return s;
  if (Status s = CheckTarGz(path); !s.ok())
    return Status(StatusCode::kIoError, "bundle written but unreadable: " + s.message());
  return Status::Ok();
}

}  // namespace faultline::actions
