#include "sources/redfish/redfish_collector.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "core/time.h"
#include "parse/redfish_map.h"
#include "parse/text.h"
#include "sources/redfish/collection_page.h"

namespace faultline::redfish {
namespace {

// Links followed from each resource type; the rest of the tree (accounts, certificates,
// network settings) is not physical evidence and costs BMC requests.
const std::map<std::string, std::vector<std::string>>& LinkTable() {
  static const std::map<std::string, std::vector<std::string>> kLinks = {
      {"ServiceRoot", {"Chassis", "Systems", "EventService"}},
      {"Chassis",
       {"Power", "Thermal", "PowerSubsystem", "ThermalSubsystem", "Sensors", "EnvironmentMetrics", "LeakDetectors",
        "LogServices"}},
      {"PowerSubsystem", {"PowerSupplies"}},
      {"PowerSupply", {"Metrics"}},
      {"ThermalSubsystem", {"Fans", "ThermalMetrics", "Pumps", "CoolantConnectors", "LeakDetection"}},
      {"LeakDetection", {"LeakDetectors"}},
      {"ComputerSystem", {"LogServices"}},
  };
  return kLinks;
}

std::string StrField(const Json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string LinkOf(const Json& j, const std::string& key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? StrField(*it, "@odata.id") : "";
}

bool IsCollection(const Json& j) {
  const std::string type = ResourceType(j);
  const std::string suffix = "Collection";
  const bool named =
      type.size() >= suffix.size() && type.compare(type.size() - suffix.size(), suffix.size(), suffix) == 0;
  return j.is_object() && (named || j.contains("Members"));
}

std::string NextLink(const Json& j) {
  std::string next = StrField(j, "@odata.nextLink");
  return next.empty() ? StrField(j, "Members@odata.nextLink") : next;
}

// The BMC's own journal or audit trail says what the BMC did, not what the hardware did.
bool IsBmcJournal(const Json& log_service) {
  for (const char* key : {"Id", "Name"}) {
    std::string v = StrField(log_service, key);
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
    if (Contains(v, "journal") || Contains(v, "audit")) return true;
  }
  return false;
}

// An expanded member carries more than its link.
bool IsExpanded(const Json& member) { return member.is_object() && member.size() > 1; }

std::string LastSegment(const std::string& uri) {
  std::string u = uri.substr(0, uri.find('?'));
  while (!u.empty() && u.back() == '/') u.pop_back();
  return u.substr(u.rfind('/') + 1);
}

std::optional<uint64_t> NumericId(const std::string& id) {
  auto v = ParseInt(id);
  if (!v || *v < 0) return std::nullopt;
  return static_cast<uint64_t>(*v);
}

bool AlreadySeen(const LogCursor& cursor, const std::string& id) {
  auto n = NumericId(id);
  if (n && cursor.last_numeric_id) return *n <= *cursor.last_numeric_id;
  return cursor.seen_ids.count(id) > 0;
}

bool IsAbsentPart(const Json& j) {
  auto status = j.find("Status");
  return status != j.end() && StrField(*status, "State") == "Absent";
}

using Handler = std::function<void(const Json&, const MapContext&)>;
// Gets the body unparsed (log pages, read as a stream: collection_page.h).
using PageHandler = std::function<void(std::string_view body, const MapContext&)>;

// Pages and members of one collection read so far in this sweep. Pages of a collection
// are read one after another (the next link is queued by the page before), so one
// Paging is never touched by two workers at once.
struct Paging {
  std::string collection;
  size_t pages = 0;
  size_t members = 0;
};

struct Task {
  std::string path;
  MapContext ctx;
  Handler handler;                  // null: the generic walk (Walk::Process)
  std::optional<Json> inline_json;  // an expanded member: no request needed
  PageHandler page;                 // set: called instead of `handler`, with the raw body
};

// Entries read from one log during a sweep, filtered against its cursor at the end.
struct PendingLog {
  MapContext ctx;
  std::vector<Json> entries;
  std::optional<uint64_t> max_listed_id;  // over every member listed, fetched or not
  bool all_numeric = true;
  size_t listed = 0;  // members listed over every page (max_log_entries)
  bool capped = false;
};

// One sweep in progress: a work queue drained by `workers` threads.
class Walk {
 public:
  Walk(RedfishClient& client, const CollectorOptions& options, const std::map<std::string, LogCursor>& cursors,
       int64_t deadline, SweepResult& result)
      : client_(client), options_(options), cursors_(cursors), deadline_(deadline), result_(result) {}

  void Enqueue(Task task) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!task.inline_json && !visited_.insert(task.path.substr(0, task.path.find('#'))).second) return;
    if (!task.inline_json && ++fetches_ > options_.max_resources) {
      if (fetches_ == options_.max_resources + 1) {
        result_.errors.push_back("sweep stopped at max_resources=" + std::to_string(options_.max_resources) +
                                 " requests (cap); the rest of the tree was not read");
      }
      return;
    }
    queue_.push_back(std::move(task));
    cv_.notify_one();
  }

  void Run(int workers) {
    std::vector<std::thread> threads;
    for (int i = 0; i < std::max(1, workers); ++i) threads.emplace_back([this] { Worker(); });
    for (auto& t : threads) t.join();
  }

  // Generic handling: map the resource, then follow the links its type is known for.
  void Process(const Json& j, const MapContext& ctx) {
    if (IsCollection(j)) {
      Members(j, ctx, nullptr);
      return;
    }
    const std::string type = ResourceType(j);
    MapContext c = ctx;
    if (type == "Chassis") c.chassis = StrField(j, "Id");
    if (type == "LogService") return LogService(j, c);
    if (type == "EventService") return EventService(j);
    AddMapped(MapResource(j, c));
    if (type == "PowerSupply" && IsAbsentPart(j)) return;  // an empty bay has no Metrics worth a request
    auto links = LinkTable().find(type);
    if (links == LinkTable().end()) return;
    for (const std::string& key : links->second) {
      if ((key == "Sensors" && !options_.read_sensors) || (key == "LogServices" && !options_.read_logs)) continue;
      std::string link = LinkOf(j, key);
      if (!link.empty()) Enqueue({link, c, nullptr, std::nullopt});
    }
  }

  // Collection members: expanded ones are handled inline, links fetched. `paging` is
  // null for a collection's first page.
  void Members(const Json& j, const MapContext& ctx, const Handler& handler, std::shared_ptr<Paging> paging = nullptr) {
    if (!paging) paging = std::make_shared<Paging>(Paging{StrField(j, "@odata.id"), 0, 0});
    ++paging->pages;
    auto it = j.find("Members");
    if (it == j.end() || it->is_null()) {
      Warn("collection without Members (null or absent) at " + StrField(j, "@odata.id"));
    } else if (!it->is_array()) {
      Warn("Members is not an array at " + StrField(j, "@odata.id"));
    } else {
      for (const Json& m : *it) {
        if (++paging->members > options_.max_members) {
          return Error("collection " + paging->collection + " has more than max_members=" +
                       std::to_string(options_.max_members) + " members over its pages (cap); the rest were not read");
        }
        std::string link = StrField(m, "@odata.id");
        if (IsExpanded(m)) {
          Enqueue({link, ctx, handler, m});
        } else if (!link.empty()) {
          Enqueue({link, ctx, handler, std::nullopt});
        } else {
          Warn("member without @odata.id at " + StrField(j, "@odata.id"));
        }
      }
    }
    std::string next = NextLink(j);
    if (next.empty()) return;
    if (paging->pages >= options_.max_collection_pages) {
      return Error("collection " + paging->collection + " has more than max_collection_pages=" +
                   std::to_string(options_.max_collection_pages) + " pages (cap); the rest were not read");
    }
    Enqueue({next, ctx,
             [this, handler, paging](const Json& page, const MapContext& c) { Members(page, c, handler, paging); },
             std::nullopt});
  }

  void Error(std::string e) {
    std::lock_guard<std::mutex> lock(mu_);
    result_.errors.push_back(std::move(e));
  }

  void AddManager(const Json& j, int64_t host_ns) {
    std::lock_guard<std::mutex> lock(mu_);
    managers_.push_back(j);
    if (!result_.bmc_offset_ns) result_.bmc_offset_ns = EstimateClockOffset(j, host_ns);
  }

  std::vector<Json> managers() const { return managers_; }

  void Warn(std::string w) {
    std::lock_guard<std::mutex> lock(mu_);
    result_.warnings.push_back(std::move(w));
  }

  // Emits the log entries not seen in earlier sweeps and moves the cursors forward.
  void FinishLogs(std::map<std::string, LogCursor>& cursors) {
    for (auto& [log, pending] : logs_) FinishLog(log, pending, cursors[log]);
  }

  void Root(const Json& j) {
    std::lock_guard<std::mutex> lock(mu_);
    root_ = j;
  }
  const Json& root() const { return root_; }

 private:
  void Worker() {
    while (true) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !queue_.empty() || active_ == 0; });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
        ++active_;
      }
      Execute(task);
      {
        std::lock_guard<std::mutex> lock(mu_);
        --active_;
      }
      cv_.notify_all();
    }
  }

  void Execute(const Task& task) {
    MapContext ctx = task.ctx;
    ctx.read_time_ns = client_.clock().NowNs();
    if (task.inline_json) return Dispatch(task, *task.inline_json, ctx);
    if (client_.clock().MonotonicNs() >= deadline_) {
      std::lock_guard<std::mutex> lock(mu_);
      ++result_.skipped;
      return;
    }
    if (task.page) return ExecutePage(task, ctx);
    Result<Json> r = client_.Get(task.path, deadline_);
    ctx.read_time_ns = client_.clock().NowNs();
    if (!r.ok()) return Failed(task.path, r.status());
    CountResource();
    Dispatch(task, *r, ctx);
  }

  void ExecutePage(const Task& task, MapContext& ctx) {
    Result<std::string> body = client_.GetText(task.path, deadline_);
    ctx.read_time_ns = client_.clock().NowNs();
    if (!body.ok()) return Failed(task.path, body.status());
    CountResource();
    try {
      task.page(*body, ctx);
    } catch (const std::exception& e) {  // nlohmann type errors on hostile JSON
      Warn("unexpected JSON shape at " + task.path + ": " + std::string(e.what()).substr(0, 120));
    }
  }

  void CountResource() {
    std::lock_guard<std::mutex> lock(mu_);
    ++result_.resources;
  }

  void Dispatch(const Task& task, const Json& j, const MapContext& ctx) {
    try {
      if (task.handler) {
        task.handler(j, ctx);
      } else {
        Process(j, ctx);
      }
    } catch (const std::exception& e) {  // nlohmann type errors on hostile JSON
      Warn("unexpected JSON shape at " + task.path + ": " + std::string(e.what()).substr(0, 120));
    }
  }

  void Failed(const std::string& path, const Status& st) {
    if (st.code() == StatusCode::kNotFound) return Warn("link to an absent resource: " + path);
    std::lock_guard<std::mutex> lock(mu_);
    if (st.code() == StatusCode::kTimeout && client_.clock().MonotonicNs() >= deadline_) {
      ++result_.skipped;
      return;
    }
    result_.errors.push_back(path + ": " + std::string(StatusCodeName(st.code())) + ": " + st.message());
  }

  void AddMapped(MapResult&& r) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& o : r.observations) result_.observations.push_back(std::move(o));
    for (auto& w : r.warnings) result_.warnings.push_back(std::move(w));
  }

  void EventService(const Json& j) {
    std::lock_guard<std::mutex> lock(mu_);
    result_.sse_uri = StrField(j, "ServerSentEventUri");
    auto it = j.find("SSEFilterPropertiesSupported");
    if (it != j.end() && it->is_object()) {
      for (const auto& [key, value] : it->items()) {
        if (value.is_boolean() && value.get<bool>()) result_.sse_filter_properties.push_back(key);
      }
    }
  }

  void LogService(const Json& j, const MapContext& ctx) {
    if (IsBmcJournal(j)) return;
    std::string entries = LinkOf(j, "Entries");
    if (entries.empty()) return Warn("log service without Entries: " + StrField(j, "@odata.id"));
    const std::string log = entries.substr(0, entries.find('?'));
    {
      std::lock_guard<std::mutex> lock(mu_);
      logs_[log].ctx = ctx;
    }
    EnqueueLogPage(log, entries, ctx, 1);
  }

  void EnqueueLogPage(const std::string& log, const std::string& url, const MapContext& ctx, size_t page_no) {
    Enqueue({url, ctx, nullptr, std::nullopt, [this, log, url, page_no](std::string_view body, const MapContext& c) {
               LogPage(log, url, body, c, page_no);
             }});
  }

  // A page is parsed as a stream and only as far as the log's max_log_entries: a BMC that
  // lists 190,000 entries on one page costs the body and the entries kept, not a
  // document of them all (issue 25). One member past the room left makes NoteListed
  // report the cap, as before.
  void LogPage(const std::string& log, const std::string& url, std::string_view body, const MapContext& ctx,
               size_t page_no) {
    const size_t room = RoomLeft(log);
    auto page = ParseCollectionPage(body, room == SIZE_MAX ? room : room + 1);
    if (!page.ok()) return Failed(url, Status(page.status().code(), page.status().message() + " at " + url));
    auto cursor_it = cursors_.find(log);
    const LogCursor empty;
    const LogCursor& cursor = cursor_it == cursors_.end() ? empty : cursor_it->second;
    if (!page->members_array) {
      Warn("log entries without a Members array at " + log);
    } else {
      for (Json& m : page->members) {
        if (!NoteListed(log, IsExpanded(m) ? StrField(m, "Id") : LastSegment(StrField(m, "@odata.id")))) return;
        if (IsExpanded(m)) {
          AddEntry(log, std::move(m));
          continue;
        }
        std::string link = StrField(m, "@odata.id");
        // Link-only members: skip the request for entries an earlier sweep already read.
        if (link.empty() || AlreadySeen(cursor, LastSegment(link))) continue;
        Enqueue({link, ctx, [this, log](const Json& e, const MapContext&) { AddEntry(log, e); }, std::nullopt});
      }
    }
    if (page->next_link.empty()) return;
    if (page_no >= options_.max_log_pages) {
      return Warn("log " + log + " has more than max_log_pages=" + std::to_string(options_.max_log_pages) +
                  " pages (cap); later pages were not read this sweep");
    }
    EnqueueLogPage(log, page->next_link, ctx, page_no + 1);
  }

  // Entries the log may still list this sweep (max_log_entries less those listed so far).
  size_t RoomLeft(const std::string& log) {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t listed = logs_[log].listed;
    return listed >= options_.max_log_entries ? 0 : options_.max_log_entries - listed;
  }

  // False once the log reached max_log_entries (with one warning naming the cap).
  bool NoteListed(const std::string& log, const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    PendingLog& p = logs_[log];
    if (++p.listed > options_.max_log_entries) {
      if (!p.capped) {
        result_.warnings.push_back("log " + log +
                                   " lists more than max_log_entries=" + std::to_string(options_.max_log_entries) +
                                   " entries (cap); the rest were not read this sweep");
      }
      p.capped = true;
      return false;
    }
    auto n = NumericId(id);
    p.all_numeric &= n.has_value();
    if (n) p.max_listed_id = std::max(p.max_listed_id.value_or(0), *n);
    return true;
  }

  void AddEntry(const std::string& log, Json entry) {
    std::lock_guard<std::mutex> lock(mu_);
    logs_[log].entries.push_back(std::move(entry));
  }

  void FinishLog(const std::string& log, PendingLog& pending, LogCursor& cursor) {
    const std::optional<uint64_t> max_id = pending.all_numeric ? pending.max_listed_id : std::nullopt;
    // Ids that restart below the high-water mark: the log was cleared (or wrapped).
    if (max_id && cursor.last_numeric_id && *max_id < *cursor.last_numeric_id) {
      result_.warnings.push_back("log " + log + " restarted its ids (cleared?); reading it again");
      cursor = LogCursor{};
    }
    const LogCursor before = cursor;
    std::set<std::string> this_sweep;  // a BMC that ignores $skip serves page 1 again
    for (const Json& e : pending.entries) {
      const std::string id = StrField(e, "Id");
      if (AlreadySeen(before, id) || !this_sweep.insert(id).second) continue;
      if (cursor.seen_ids.size() < options_.max_seen_ids) cursor.seen_ids.insert(id);
      AddMapped(MapLogEntry(e, pending.ctx, log));
    }
    if (max_id) cursor.last_numeric_id = std::max(cursor.last_numeric_id.value_or(0), *max_id);
    if (cursor.last_numeric_id) cursor.seen_ids.clear();  // numeric ids need only the high-water mark
  }

  RedfishClient& client_;
  const CollectorOptions& options_;
  const std::map<std::string, LogCursor>& cursors_;
  const int64_t deadline_;
  SweepResult& result_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  int active_ = 0;
  std::set<std::string> visited_;
  size_t fetches_ = 0;  // requests queued (max_resources)
  std::vector<Json> managers_;
  std::map<std::string, PendingLog> logs_;
  Json root_;
};

}  // namespace

RedfishCollector::RedfishCollector(RedfishClient& client, CollectorOptions options)
    : client_(client), options_(std::move(options)) {}

SweepResult RedfishCollector::Sweep(int64_t deadline) {
  SweepResult result;
  const int64_t start = client_.clock().MonotonicNs();
  const uint64_t requests_before = client_.requests();
  const int workers = options_.workers > 0 ? options_.workers : 2;
  MapContext root_ctx;
  root_ctx.node = options_.node;
  {
    // Phase 1: the service root and the managers, whose DateTime gives the clock
    // offset that every log entry time is corrected by.
    Walk walk(client_, options_, cursors_, deadline, result);
    walk.Enqueue({"/redfish/v1", root_ctx,
                  [&walk](const Json& j, const MapContext& ctx) {
                    walk.Root(j);
                    std::string managers = LinkOf(j, "Managers");
                    if (managers.empty()) return;
                    walk.Enqueue({managers, ctx,
                                  [&walk](const Json& coll, const MapContext& c) {
                                    walk.Members(coll, c, [&walk](const Json& m, const MapContext& mc) {
                                      walk.AddManager(m, mc.read_time_ns);
                                    });
                                  },
                                  std::nullopt});
                  },
                  std::nullopt});
    walk.Run(workers);
    if (result.bmc_offset_ns) {
      root_ctx.bmc_offset_ns = *result.bmc_offset_ns;
      root_ctx.offset_known = true;
    }
    // Phase 2: everything else, from the same root.
    Walk rest(client_, options_, cursors_, deadline, result);
    if (walk.root().is_object()) {
      rest.Enqueue({"/redfish/v1", root_ctx, nullptr, walk.root()});
      for (const Json& m : walk.managers()) {
        MapContext mc = root_ctx;
        const bool read_logs = options_.read_logs;
        rest.Enqueue({StrField(m, "@odata.id"), mc,
                      [&rest, read_logs](const Json& j, const MapContext& c) {
                        rest.Process(j, c);  // Manager Status/Conditions
                        if (std::string logs = LinkOf(j, "LogServices"); !logs.empty() && read_logs) {
                          rest.Enqueue({logs, c, nullptr, std::nullopt});
                        }
                      },
                      m});
      }
    }
    rest.Run(workers);
    rest.FinishLogs(cursors_);
  }
  if (result.skipped > 0) {
    result.errors.push_back("sweep deadline reached: " + std::to_string(result.skipped) + " resources not read");
  }
  MarkImplausibleReadings(result.observations, result.warnings);
  for (auto& w : client_.TakeWarnings()) result.warnings.push_back(std::move(w));
  result.requests = client_.requests() - requests_before;
  result.duration_ns = client_.clock().MonotonicNs() - start;
  return result;
}

}  // namespace faultline::redfish
