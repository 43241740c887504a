#include "assistant/kb/knowledge_base.h"

#include <sys/stat.h>
#include <xapian.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "assistant/kb/markdown.h"
#include "assistant/kb/terms.h"
#include "core/time.h"

namespace faultline::assistant::kb {

namespace fs = std::filesystem;

namespace {

// Bumped whenever terms, prefixes or the document data change: an index written by another
// version is emptied and rebuilt by the next Reindex.
constexpr const char* kSchemaKey = "kb:schema";
constexpr const char* kSchema = "faultline-kb-2";
constexpr const char* kFileKeyPrefix = "f:";
constexpr size_t kMaxResults = 100;
constexpr size_t kMaxQueryBytes = 1024;
constexpr int kMaxDepth = 8;

// Field boosts (docs/assistant.md "Knowledge base"), each a scale on that field's own BM25
// weight. A field's terms are rare within the field (a word is in few titles), so its IDF is
// high and a small scale already counts. Measured with bench_kb over queries.tsv (before the
// primary-code term existed): title/class/component scales of 2/2.5/1.5 gave 76% top-3, 1/1.5/1
// gave 82%, 0.25/0.5/0.25 gave 90%: large scales let a title word outrank the passage that
// answers the question. An exact code names the entries and runbooks that list it; a catalog
// entry (kb/xid) is the document for its own code (the primary-code term).
constexpr double kBoostCode = 6.0;
constexpr double kBoostPrimaryCode = 6.0;
constexpr double kBoostClass = 0.5;
constexpr double kBoostTitle = 0.25;
constexpr double kBoostComponent = 0.25;

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// FNV-1a: a stable hash (std::hash is not guaranteed stable across builds) for file
// contents and for term keys derived from paths of any length.
uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

std::string FileTerm(std::string_view rel_path) { return "F" + Hex64(Fnv1a(rel_path)); }
std::string IdTerm(std::string_view doc_id) { return "Q" + Hex64(Fnv1a(doc_id)); }

// Document data: "kb1\n" then each field as "<length>:<bytes>". Length-prefixed so any bytes
// round-trip and a damaged record is detected rather than misread.
std::string EncodeHit(const KbHit& h) {
  std::string out = "kb1\n";
  for (const std::string* f : {&h.doc_id, &h.kind, &h.title, &h.section, &h.path, &h.text}) {
    out += std::to_string(f->size());
    out += ':';
    out += *f;
  }
  return out;
}

bool DecodeHit(std::string_view data, KbHit* h) {
  if (!data.starts_with("kb1\n")) return false;
  data.remove_prefix(4);
  for (std::string* f : {&h->doc_id, &h->kind, &h->title, &h->section, &h->path, &h->text}) {
    const size_t colon = data.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon > 8) return false;
    size_t n = 0;
    for (char c : data.substr(0, colon)) {
      if (c < '0' || c > '9') return false;
      n = n * 10 + static_cast<size_t>(c - '0');
    }
    data.remove_prefix(colon + 1);
    if (n > data.size()) return false;
    f->assign(data.substr(0, n));
    data.remove_prefix(n);
  }
  return data.empty();
}

// The per-file record in the index metadata: "<mtime_ns> <size> <hash>\n<path>".
struct FileStamp {
  int64_t mtime_ns = -1;
  int64_t size = -1;
  std::string hash;
  std::string path;
};

std::string EncodeStamp(const FileStamp& s) {
  return std::to_string(s.mtime_ns) + " " + std::to_string(s.size) + " " + s.hash + "\n" + s.path;
}

FileStamp DecodeStamp(const std::string& v) {
  FileStamp s;
  const size_t nl = v.find('\n');
  if (nl == std::string::npos) return s;
  long long mtime = 0, size = 0;
  char hash[17] = {0};
  if (std::sscanf(v.c_str(), "%lld %lld %16s", &mtime, &size, hash) == 3) {
    s.mtime_ns = mtime;
    s.size = size;
    s.hash = hash;
  }
  s.path = v.substr(nl + 1);
  return s;
}

// Kind of a file without front matter, from its top folder.
std::string KindFromPath(const std::string& rel) {
  const std::string top = rel.substr(0, rel.find('/'));
  if (top == "runbooks") return "runbook";
  if (top == "xid") return rel.find("/sxid-") != std::string::npos ? "sxid" : "xid";
  if (top == "reference") return "reference";
  return "note";
}

// Kinds a file may declare; "incident" is reserved for the store's incidents.
std::string FileKind(const std::string& declared, const std::string& rel) {
  static const std::set<std::string> kFileKinds = {"runbook", "xid", "sxid", "reference", "note"};
  return kFileKinds.count(declared) != 0 ? declared : KindFromPath(rel);
}

// "kb/xid/xid-79.md" -> "xid/79"; "runbooks/gpu_fell_off_bus.md" -> "runbook/gpu_fell_off_bus".
std::string DocBase(const std::string& kind, const std::string& rel) {
  std::string stem = fs::path(rel).stem().string();
  if (stem.starts_with(kind + "-")) stem = stem.substr(kind.size() + 1);
  return kind + "/" + stem;
}

std::string WordsOf(std::string_view name) {
  std::string s(name);
  std::replace(s.begin(), s.end(), '_', ' ');
  std::replace(s.begin(), s.end(), '/', ' ');
  return s;
}

Status FromXapian(const Xapian::Error& e, const std::string& what) {
  // Xapian's error classes are not polymorphic: tell them apart by name.
  const std::string type = e.get_type();
  const std::string msg = what + ": " + type + ": " + e.get_msg();
  if (type == "DatabaseLockError") return Status(StatusCode::kUnavailable, msg);
  if (type == "DatabaseNotFoundError") return Status(StatusCode::kNotFound, msg);
  if (type == "DatabaseCorruptError" || type == "DatabaseVersionError" || type == "DatabaseOpeningError") {
    return Status(StatusCode::kCorrupt, msg);
  }
  return Status(StatusCode::kIoError, msg);
}

// Reads at most kMaxFileBytes + 1 bytes, so an oversized file is detected without reading it all.
Result<std::string> ReadBounded(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return Status(StatusCode::kIoError, "cannot open");
  std::string data(kMaxFileBytes + 1, '\0');
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  data.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) return Status(StatusCode::kIoError, "read error");
  return data;
}

}  // namespace

struct KnowledgeBase::Impl {
  std::string kb_dir;
  std::string index_dir;
  KbOptions options;
  std::unique_ptr<Xapian::WritableDatabase> wdb;
  Xapian::Database rdb;
  Xapian::Stem stem{"english"};

  Xapian::Database& db() { return wdb ? static_cast<Xapian::Database&>(*wdb) : rdb; }

  void AddField(Xapian::Document& doc, std::string_view text, const std::string& prefix, unsigned wdf) {
    for (const std::string& t : StemmedTerms(text, stem)) doc.add_term(prefix + t, wdf);
  }

  // One section (or incident) as a Xapian document.
  Xapian::Document MakeDocument(const KbHit& hit, std::string_view body, const std::vector<std::string>& classes,
                                const std::vector<std::string>& components, const std::vector<std::string>& codes,
                                const std::string& file_term) {
    Xapian::Document doc;
    AddField(doc, hit.title, "", 1);
    AddField(doc, hit.section, "", 2);
    AddField(doc, body, "", 1);
    AddField(doc, hit.title, kPrefixTitle, 1);
    for (const std::string& c : classes) {
      AddField(doc, WordsOf(c), kPrefixClass, 1);
      doc.add_boolean_term(kPrefixClassExact + c);
    }
    for (const std::string& c : components) AddField(doc, WordsOf(c), kPrefixComponent, 1);
    for (const std::string& c : codes) doc.add_term(kPrefixCode + c, 1);
    // A catalog entry is the document for its code: a query naming the code should find it
    // before the runbooks that merely list the code among theirs.
    if (hit.kind == "xid" || hit.kind == "sxid") {
      for (const std::string& c : codes) doc.add_term(kPrefixPrimaryCode + c, 1);
    }
    doc.add_boolean_term("K" + hit.kind);
    doc.add_boolean_term(IdTerm(hit.doc_id));
    if (!file_term.empty()) doc.add_boolean_term(file_term);
    doc.set_data(EncodeHit(hit));
    return doc;
  }

  size_t IndexFile(const std::string& rel, const KbFile& file) {
    const std::string kind = FileKind(file.kind, rel);
    const std::string base = DocBase(kind, rel);
    const std::string title = file.title.empty() ? base : file.title;
    const std::string fterm = FileTerm(rel);
    wdb->delete_document(fterm);
    for (const KbSection& s : file.sections) {
      KbHit hit;
      hit.doc_id = s.anchor.empty() ? base : base + "#" + s.anchor;
      hit.kind = kind;
      hit.title = title;
      hit.section = s.heading;
      hit.path = rel;
      hit.text = std::string(CutUtf8(s.text, kMaxPassageBytes));
      wdb->add_document(MakeDocument(hit, s.text, file.classes, file.components, file.codes, fterm));
    }
    return file.sections.size();
  }

  void ClearAll() {
    std::vector<Xapian::docid> ids;
    for (auto it = wdb->postlist_begin(""); it != wdb->postlist_end(""); ++it) ids.push_back(*it);
    for (Xapian::docid id : ids) wdb->delete_document(id);
    std::vector<std::string> keys;
    for (auto it = wdb->metadata_keys_begin(); it != wdb->metadata_keys_end(); ++it) keys.push_back(*it);
    for (const std::string& k : keys) wdb->set_metadata(k, "");
  }

  // Every *.md under kb_dir (no symlinks, no hidden folders), relative path -> absolute.
  std::map<std::string, fs::path> ListFiles(ReindexStats* stats) {
    std::map<std::string, fs::path> files;
    std::error_code ec;
    fs::recursive_directory_iterator it(kb_dir, fs::directory_options::skip_permission_denied, ec);
    if (ec) {
      stats->errors.push_back(kb_dir + ": " + ec.message());
      return files;
    }
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) {
        stats->errors.push_back(kb_dir + ": " + ec.message());
        break;
      }
      const fs::directory_entry& e = *it;
      const std::string name = e.path().filename().string();
      if (e.is_symlink(ec)) continue;
      if (e.is_directory(ec)) {
        if (name.starts_with(".") || it.depth() >= kMaxDepth) it.disable_recursion_pending();
        continue;
      }
      if (!e.is_regular_file(ec) || e.path().extension() != ".md" || name.starts_with(".")) continue;
      const std::string rel = fs::relative(e.path(), kb_dir, ec).generic_string();
      if (ec || rel.empty()) continue;
      if (files.size() >= options.max_files) {
        stats->errors.push_back(rel + ": not indexed, past the " + std::to_string(options.max_files) + "-file limit");
        continue;
      }
      files.emplace(rel, e.path());
    }
    return files;
  }

  // Brings one file's documents up to date; false (with an error) leaves them as they were.
  void SyncFile(const std::string& rel, const fs::path& abs, ReindexStats* stats) {
    struct stat st {};
    if (::lstat(abs.c_str(), &st) != 0) {
      stats->errors.push_back(rel + ": cannot stat");
      return;
    }
    const std::string key = kFileKeyPrefix + Hex64(Fnv1a(rel));
    const FileStamp old = DecodeStamp(wdb->get_metadata(key));
    FileStamp now;
    now.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    now.size = st.st_size;
    now.path = rel;
    if (old.path == rel && old.mtime_ns == now.mtime_ns && old.size == now.size) {
      ++stats->files_unchanged;
      return;
    }
    auto bytes = ReadBounded(abs);
    if (!bytes.ok()) {
      stats->errors.push_back(rel + ": " + bytes.status().message());
      return;
    }
    now.hash = Hex64(Fnv1a(*bytes));
    now.size = static_cast<int64_t>(bytes->size());
    if (old.path == rel && old.hash == now.hash) {
      wdb->set_metadata(key, EncodeStamp(now));  // touched, not changed
      ++stats->files_unchanged;
      return;
    }
    auto parsed = ParseKbMarkdown(*bytes);
    if (!parsed.ok()) {
      stats->errors.push_back(rel + ": " + parsed.status().message());
      return;
    }
    if (parsed->sections_dropped > 0) {
      stats->errors.push_back(rel + ": " + std::to_string(parsed->sections_dropped) + " section(s) past the " +
                              std::to_string(kMaxSections) + "-section limit not indexed");
    }
    stats->sections_indexed += IndexFile(rel, *parsed);
    wdb->set_metadata(key, EncodeStamp(now));
    ++stats->files_indexed;
  }

  void RemoveGone(const std::set<std::string>& present, ReindexStats* stats) {
    std::vector<std::pair<std::string, std::string>> gone;  // key, path
    for (auto it = wdb->metadata_keys_begin(kFileKeyPrefix); it != wdb->metadata_keys_end(kFileKeyPrefix); ++it) {
      const FileStamp s = DecodeStamp(wdb->get_metadata(*it));
      if (present.count(s.path) == 0) gone.emplace_back(*it, s.path);
    }
    for (const auto& [key, path] : gone) {
      wdb->delete_document(FileTerm(path));
      wdb->set_metadata(key, "");
      ++stats->files_removed;
    }
  }

  Xapian::Query BuildQuery(std::string_view query) {
    // Bare numbers in a question are nearly always an index or a reading ("gpu 3", "psu 2",
    // "40 per hour"), not what it is about; a catalog code is matched exactly instead.
    std::vector<std::string> words = StemmedTerms(query, stem);
    std::erase_if(words, [](const std::string& w) {
      return std::all_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; });
    });
    const std::vector<std::string> codes = CodesInQuery(query);
    std::vector<Xapian::Query> parts;
    auto field = [&](const std::string& prefix, double boost) {
      std::vector<Xapian::Query> terms;
      for (const std::string& w : words) terms.emplace_back(prefix + w);
      if (terms.empty()) return;
      Xapian::Query q(Xapian::Query::OP_OR, terms.begin(), terms.end());
      parts.push_back(boost == 1.0 ? q : Xapian::Query(Xapian::Query::OP_SCALE_WEIGHT, q, boost));
    };
    field("", 1.0);
    field(kPrefixTitle, kBoostTitle);
    field(kPrefixClass, kBoostClass);
    field(kPrefixComponent, kBoostComponent);
    auto exact = [&](const std::string& prefix, double boost) {
      std::vector<Xapian::Query> terms;
      for (const std::string& c : codes) terms.emplace_back(prefix + c);
      if (terms.empty()) return;
      parts.emplace_back(Xapian::Query::OP_SCALE_WEIGHT,
                         Xapian::Query(Xapian::Query::OP_OR, terms.begin(), terms.end()), boost);
    };
    exact(kPrefixCode, kBoostCode);
    exact(kPrefixPrimaryCode, kBoostPrimaryCode);
    if (parts.empty()) return Xapian::Query();
    return Xapian::Query(Xapian::Query::OP_OR, parts.begin(), parts.end());
  }
};

KnowledgeBase::KnowledgeBase(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KnowledgeBase::~KnowledgeBase() = default;

Result<std::unique_ptr<KnowledgeBase>> KnowledgeBase::Open(const std::string& kb_dir, const std::string& index_dir,
                                                           const KbOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(kb_dir, ec)) return Status(StatusCode::kNotFound, "knowledge base folder " + kb_dir);
  auto impl = std::make_unique<Impl>();
  impl->kb_dir = kb_dir;
  impl->index_dir = index_dir;
  impl->options = options;
  try {
    if (options.read_only) {
      if (!fs::exists(index_dir, ec)) return Status(StatusCode::kNotFound, "knowledge base index " + index_dir);
      impl->rdb = Xapian::Database(index_dir);
    } else {
      fs::create_directories(index_dir, ec);
      if (ec) return Status(StatusCode::kIoError, "create " + index_dir + ": " + ec.message());
      impl->wdb = std::make_unique<Xapian::WritableDatabase>(index_dir, Xapian::DB_CREATE_OR_OPEN);
    }
  } catch (const Xapian::Error& e) {
    return FromXapian(e, "open " + index_dir);
  }
  return std::unique_ptr<KnowledgeBase>(new KnowledgeBase(std::move(impl)));
}

Result<ReindexStats> KnowledgeBase::Reindex() {
  std::lock_guard lock(mu_);
  if (!impl_->wdb) return Status(StatusCode::kPermissionDenied, "knowledge base opened read-only");
  ReindexStats stats;
  Xapian::WritableDatabase& w = *impl_->wdb;
  try {
    w.begin_transaction();
    if (w.get_metadata(kSchemaKey) != kSchema) {
      impl_->ClearAll();
      w.set_metadata(kSchemaKey, kSchema);
    }
    const auto files = impl_->ListFiles(&stats);
    std::set<std::string> present;
    for (const auto& [rel, abs] : files) {
      ++stats.files_seen;
      present.insert(rel);
      impl_->SyncFile(rel, abs, &stats);
    }
    impl_->RemoveGone(present, &stats);
    w.commit_transaction();
  } catch (const Xapian::Error& e) {
    try {
      w.cancel_transaction();
    } catch (const Xapian::Error&) {
      // not in a transaction any more: nothing to undo
    }
    return FromXapian(e, "reindex " + impl_->index_dir);
  }
  return stats;
}

Result<std::vector<KbHit>> KnowledgeBase::Search(std::string_view query, size_t k) const {
  std::lock_guard lock(mu_);
  const std::string q = SanitizeText(CutUtf8(query, kMaxQueryBytes));
  std::vector<KbHit> hits;
  k = std::min(k, kMaxResults);
  if (k == 0) return hits;
  try {
    const Xapian::Query xq = impl_->BuildQuery(q);
    if (xq.empty()) return hits;
    if (!impl_->wdb) impl_->rdb.reopen();  // see what the writer committed since
    Xapian::Enquire enquire(impl_->db());
    enquire.set_query(xq);
    const Xapian::MSet mset = enquire.get_mset(0, static_cast<Xapian::doccount>(k));
    for (auto it = mset.begin(); it != mset.end(); ++it) {
      KbHit hit;
      if (!DecodeHit(it.get_document().get_data(), &hit)) continue;  // a damaged record is skipped
      hit.score = it.get_weight();
      hits.push_back(std::move(hit));
    }
  } catch (const Xapian::Error& e) {
    return FromXapian(e, "search " + impl_->index_dir);
  }
  return hits;
}

Status KnowledgeBase::AddIncident(const Incident& incident) {
  std::lock_guard lock(mu_);
  if (!impl_->wdb) return Status(StatusCode::kPermissionDenied, "knowledge base opened read-only");
  if (incident.diagnosis_id <= 0) return Status(StatusCode::kInvalidArgument, "incident without a diagnosis id");
  if (incident.fixed_by.empty()) return Status(StatusCode::kInvalidArgument, "incident without fixed_by");
  const std::string cls(ToString(incident.fault_class));
  const std::string component = SanitizeText(CutUtf8(incident.component, kMaxHeadingBytes));
  const std::string node = SanitizeText(CutUtf8(incident.node, kMaxHeadingBytes));
  const std::string summary = SanitizeText(CutUtf8(incident.summary, kMaxIncidentFieldBytes));
  const std::string fixed_by = SanitizeText(CutUtf8(incident.fixed_by, kMaxIncidentFieldBytes));
  KbHit hit;
  hit.doc_id = "incident/" + std::to_string(incident.diagnosis_id);
  hit.kind = "incident";
  hit.title = "Past incident " + std::to_string(incident.diagnosis_id) + ": " + cls + " on " + component +
              (node.empty() ? "" : " (" + node + ")");
  std::string text = "Fault class: " + cls + "\nComponent: " + component + "\n";
  if (!node.empty()) text += "Node: " + node + "\n";
  if (incident.first_ns > 0) text += "Began: " + FormatIso8601(incident.first_ns) + "\n";
  if (incident.resolved_ns > 0) text += "Resolved: " + FormatIso8601(incident.resolved_ns) + "\n";
  text += "Diagnosis: " + summary + "\nFixed by: " + fixed_by + "\n";
  hit.text = std::string(CutUtf8(text, kMaxPassageBytes));
  try {
    const std::string body = text + " fixed resolved";  // "how was it fixed last time" finds incidents
    impl_->wdb->replace_document(IdTerm(hit.doc_id),
                                 impl_->MakeDocument(hit, body, {cls}, {WordsOf(component)}, {}, ""));
    impl_->wdb->commit();
  } catch (const Xapian::Error& e) {
    return FromXapian(e, "add incident to " + impl_->index_dir);
  }
  return Status::Ok();
}

Result<size_t> KnowledgeBase::DocumentCount() const {
  std::lock_guard lock(mu_);
  try {
    if (!impl_->wdb) impl_->rdb.reopen();
    return static_cast<size_t>(impl_->db().get_doccount());
  } catch (const Xapian::Error& e) {
    return FromXapian(e, "count " + impl_->index_dir);
  }
}

}  // namespace faultline::assistant::kb
