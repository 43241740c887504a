#include "sources/redfish/collection_page.h"

#include <exception>
#include <utility>

namespace faultline::redfish {
namespace {

// Depths, counting containers: the page object is 1, its Members array 2, a member's own
// object or array 3.
constexpr int kPageDepth = 1;
constexpr int kMembersDepth = 2;

// Receives the parser's events. Values directly in the page object are looked at only
// for the three link keys; Members' elements are built one at a time and handed over
// whole; everything else is passed over without being stored.
class PageSax final : public Json::json_sax_t {
 public:
  PageSax(CollectionPage& page, size_t max_members, int max_depth)
      : page_(page), max_members_(max_members), max_depth_(max_depth) {}

  bool null() override { return Value(Json(nullptr)); }
  bool boolean(bool v) override { return Value(Json(v)); }
  bool number_integer(number_integer_t v) override { return Value(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Value(Json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return Value(Json(v)); }
  bool string(string_t& v) override {
    if (depth_ == kPageDepth) TopLevelString(v);
    return Value(Json(std::move(v)));
  }
  bool binary(binary_t&) override { return Value(Json(nullptr)); }  // not in JSON text
  bool start_object(std::size_t) override { return Open(Json::object()); }
  bool start_array(std::size_t) override { return Open(Json::array()); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& k) override {
    if (depth_ == kPageDepth) top_key_ = k;
    if (Building()) key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const Json::exception&) override {
    error_ = "malformed JSON";
    return false;
  }

  const std::string& error() const { return error_; }
  bool stopped() const { return stopped_; }  // by the cap, not by an error

 private:
  bool InMembers() const { return depth_ >= kMembersDepth && in_members_; }
  bool Building() const { return !stack_.empty(); }

  void TopLevelString(const std::string& v) {
    if (top_key_ == "@odata.id") page_.id = v;
    if (top_key_ == "@odata.nextLink" && !v.empty()) page_.next_link = v;  // wins over Members@odata.nextLink
    if (top_key_ == "Members@odata.nextLink" && page_.next_link.empty()) page_.next_link = v;
  }

  // A scalar: a whole member when directly in Members, part of one being built, else skipped.
  bool Value(Json v) {
    if (Building()) {
      Add(std::move(v));
      return true;
    }
    if (InMembers() && depth_ == kMembersDepth) return Emit(std::move(v));
    return true;
  }

  bool Open(Json container) {
    if (++depth_ > max_depth_) {
      error_ = "JSON nested deeper than " + std::to_string(max_depth_) + " levels: refused";
      return false;
    }
    if (depth_ == kMembersDepth && top_key_ == "Members" && container.is_array()) {
      in_members_ = page_.members_array = true;
    } else if (Building()) {
      stack_.push_back(Add(std::move(container)));
    } else if (InMembers() && depth_ == kMembersDepth + 1) {
      member_ = std::move(container);
      stack_.push_back(&member_);
    }
    return true;
  }

  bool Close() {
    if (depth_ == kMembersDepth && in_members_) in_members_ = false;
    --depth_;
    if (!Building()) return true;
    stack_.pop_back();
    return Building() || Emit(std::move(member_));
  }

  // Adds `v` to the container being built; the address of the value added (stable: an
  // ancestor is never changed while a descendant is being filled).
  Json* Add(Json v) {
    Json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    Json& slot = parent[key_];
    slot = std::move(v);
    return &slot;
  }

  // False (stop reading) at the first member past the cap.
  bool Emit(Json member) {
    if (page_.members.size() >= max_members_) {
      page_.more = stopped_ = true;
      return false;
    }
    page_.members.push_back(std::move(member));
    return true;
  }

  CollectionPage& page_;
  const size_t max_members_;
  const int max_depth_;
  int depth_ = 0;
  std::string top_key_;       // the page object's current key
  bool in_members_ = false;   // inside the page's Members array
  Json member_;               // the member being built
  std::vector<Json*> stack_;  // its open containers, innermost last
  std::string key_;           // the key of the next value in the innermost object
  std::string error_;
  bool stopped_ = false;
};

}  // namespace

Result<CollectionPage> ParseCollectionPage(std::string_view body, size_t max_members, int max_depth) {
  CollectionPage page;
  PageSax sax(page, max_members, max_depth);
  try {
    if (Json::sax_parse(body.begin(), body.end(), &sax) || sax.stopped()) return page;
  } catch (const std::exception&) {  // the library's own limits; the handler never throws
    return Status(StatusCode::kCorrupt, "malformed JSON");
  }
  return Status(StatusCode::kCorrupt, sax.error().empty() ? std::string("malformed JSON") : sax.error());
}

}  // namespace faultline::redfish
