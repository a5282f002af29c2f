#include "core/runtime/disk_cache.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <system_error>
#include <thread>
#include <vector>

#include "core/runtime/runtime.h"

namespace sn {

namespace {

constexpr int kBusyTimeoutMs = 5000;

// "cache unavailable" reasons go to stderr at SN_DEBUG >= 2 only: a cache never fails a compile.
void note(const std::string& path, const char* what, sqlite3* db, int rc) {
  static const int level = debug_level_from_env();
  if (level < 2) return;
  std::fprintf(stderr, "sinter: disk cache %s unavailable: %s: %s\n", path.c_str(), what,
               db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

// Runs sql, trying again while the database is busy, for as long as the busy timeout. Setting up
// a new database (WAL mode, the table) takes locks that SQLite's busy handler does not always wait
// for: processes opening a fresh cache at once got "database is locked" from the set-up at once,
// and each such process ran without its cache for its whole life (3 processes x 100 fresh caches:
// 27 of the 300; DiskCache.ProcessesOpeningAFreshCacheAtOnceKeepIt).
int exec_while_busy(sqlite3* db, const char* sql) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (int pause_us = 100;; pause_us = std::min(2 * pause_us, 20000)) {
    int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
    int primary = rc & 0xff;
    if ((primary != SQLITE_BUSY && primary != SQLITE_LOCKED) || std::chrono::steady_clock::now() >= deadline) return rc;
    std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
  }
}

bool damaged(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT;
}

// A statement that finalizes itself.
struct Stmt {
  sqlite3_stmt* s = nullptr;
  ~Stmt() { sqlite3_finalize(s); }
};

// Every connection's settings. (journal_size_limit: the WAL is cut back to 16 MiB when it restarts,
// instead of keeping the size a trim's incremental_vacuum grew it to while connections stay open.)
#define SN_CACHE_CONNECTION_PRAGMAS \
  "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA journal_size_limit=16777216;"
constexpr const char* kConnection = SN_CACHE_CONNECTION_PRAGMAS;

// The schema, created by the first process to open the file (its connection set up too). `totals`
// keeps the bytes of all values (kept by triggers in the same statement as each change, so it is
// exact whichever process wrote), so a put knows whether the cache is over its limit without
// reading the table. `used` is when an
// entry was last stored or read (to the touch interval): the least recently used go first.
// auto_vacuum takes effect only in a new file (before its first table): freed pages are then given
// back to the file system by incremental_vacuum after a trim.
constexpr const char* kSchema =
    "PRAGMA auto_vacuum=INCREMENTAL;" SN_CACHE_CONNECTION_PRAGMAS
    "CREATE TABLE IF NOT EXISTS entries(key TEXT PRIMARY KEY, used INTEGER NOT NULL, value BLOB NOT NULL);"
    "CREATE INDEX IF NOT EXISTS entries_by_use ON entries(used);"
    "CREATE TABLE IF NOT EXISTS totals(id INTEGER PRIMARY KEY CHECK(id = 0), bytes INTEGER NOT NULL);"
    "INSERT OR IGNORE INTO totals SELECT 0, COALESCE(SUM(length(value)), 0) FROM entries;"
    "CREATE TRIGGER IF NOT EXISTS entries_added AFTER INSERT ON entries BEGIN "
    "UPDATE totals SET bytes = bytes + length(NEW.value); END;"
    "CREATE TRIGGER IF NOT EXISTS entries_removed AFTER DELETE ON entries BEGIN "
    "UPDATE totals SET bytes = bytes - length(OLD.value); END;"
    "CREATE TRIGGER IF NOT EXISTS entries_replaced AFTER UPDATE OF value ON entries BEGIN "
    "UPDATE totals SET bytes = bytes - length(OLD.value) + length(NEW.value); END;";

constexpr const char* kSchemaCount =
    "SELECT count(*) FROM sqlite_master WHERE name IN "
    "('entries', 'entries_by_use', 'totals', 'entries_added', 'entries_removed', 'entries_replaced')";
constexpr int64_t kSchemaObjects = 6;

int64_t now_s() { return int64_t(std::time(nullptr)); }

// The value of a one-column, one-row query; nullopt when it fails or returns no row.
std::optional<int64_t> query_int(sqlite3* db, const char* sql) {
  Stmt st;
  if (sqlite3_prepare_v2(db, sql, -1, &st.s, nullptr) != SQLITE_OK) return std::nullopt;
  if (sqlite3_step(st.s) != SQLITE_ROW) return std::nullopt;
  return sqlite3_column_int64(st.s, 0);
}

}  // namespace

DiskCacheLimits disk_cache_limits_from_env() {
  DiskCacheLimits limits;
  const char* v = std::getenv("SN_CACHE_MAX_MB");
  if (!v || !*v) return limits;
  char* end = nullptr;
  errno = 0;
  long long mb = std::strtoll(v, &end, 10);
  if (errno == 0 && *end == '\0' && mb > 0 && mb <= (int64_t(1) << 40)) {
    limits.max_bytes = int64_t(mb) << 20;
  } else if (debug_level_from_env() >= 1) {
    std::fprintf(stderr, "sinter: SN_CACHE_MAX_MB=%s is not a positive number of MiB; the disk cache keeps %lld MiB\n",
                 v, static_cast<long long>(limits.max_bytes >> 20));
  }
  return limits;
}

DiskCache::DiskCache(std::string path, DiskCacheLimits limits) : path_(std::move(path)), limits_(limits) {}

DiskCache::~DiskCache() {
  std::lock_guard<std::mutex> lk(mu_);
  close_locked();
}

void DiskCache::close_locked() {
  if (db_) sqlite3_close_v2(db_);
  db_ = nullptr;
}

void DiskCache::drop_locked() {
  close_locked();
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix, ec);
  tried_ = false;  // the next call creates it again
}

bool DiskCache::open_locked() {
  if (tried_) return db_ != nullptr;
  tried_ = true;
  if (path_.empty()) return false;
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  for (int attempt = 0; attempt < 2; attempt++) {
    int rc =
        sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      note(path_, "open", db_, rc);
      close_locked();
      return false;
    }
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    // Setting auto_vacuum costs a write (about 1 ms) even when it changes nothing, so a process
    // that finds the schema in place sets up only its connection.
    std::optional<int64_t> have = query_int(db_, kSchemaCount);
    rc = exec_while_busy(db_, have && *have == kSchemaObjects ? kConnection : kSchema);
    if (rc == SQLITE_OK) {
      drop_legacy_table_locked();
      trim_locked();  // a smaller limit than the last process's takes effect at once
      return true;
    }
    note(path_, "set up", db_, rc);
    close_locked();
    if (!damaged(rc) || attempt > 0) return false;
    // Not a database (truncated, overwritten): start a new one.
    drop_locked();
    tried_ = true;
  }
  return false;
}

bool DiskCache::enabled() {
  std::lock_guard<std::mutex> lk(mu_);
  return open_locked();
}

void DiskCache::open_existing() {
  std::lock_guard<std::mutex> lk(mu_);
  std::error_code ec;
  if (!tried_ && !path_.empty() && std::filesystem::is_regular_file(path_, ec)) open_locked();
}

std::optional<std::string> DiskCache::get(std::string_view key) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!open_locked()) return std::nullopt;
  Stmt st;
  int rc = sqlite3_prepare_v2(db_, "SELECT used, value FROM entries WHERE key = ?1", -1, &st.s, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st.s, 1, key.data(), int(key.size()), SQLITE_TRANSIENT);
  if (rc == SQLITE_OK) rc = sqlite3_step(st.s);
  if (rc == SQLITE_ROW) {
    int64_t used = sqlite3_column_int64(st.s, 0);
    const void* blob = sqlite3_column_blob(st.s, 1);
    int n = sqlite3_column_bytes(st.s, 1);
    std::string value = n > 0 && blob ? std::string(static_cast<const char*>(blob), size_t(n)) : std::string();
    sqlite3_finalize(st.s);
    st.s = nullptr;
    // Once per touch interval at most: a read that writes on every hit would cost a warm start a
    // write transaction per kernel.
    int64_t now = now_s();
    if (now - used >= limits_.touch_every_s) touch_locked(key, now);
    return value;
  }
  if (rc != SQLITE_DONE) {
    note(path_, "get", db_, rc);
    sqlite3_finalize(st.s);
    st.s = nullptr;
    if (damaged(rc)) drop_locked();
  }
  return std::nullopt;
}

void DiskCache::touch_locked(std::string_view key, int64_t now) {
  Stmt st;
  int rc = sqlite3_prepare_v2(db_, "UPDATE entries SET used = ?2 WHERE key = ?1", -1, &st.s, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st.s, 1, key.data(), int(key.size()), SQLITE_TRANSIENT);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st.s, 2, now);
  if (rc == SQLITE_OK) rc = sqlite3_step(st.s);
  if (rc != SQLITE_DONE) note(path_, "touch", db_, rc);  // the entry only ages sooner
}

bool DiskCache::put(std::string_view key, std::string_view value) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!open_locked()) return false;
  if (int64_t(value.size()) > limits_.max_bytes / 4) return false;  // would push out most of the cache
  Stmt st;
  int rc = sqlite3_prepare_v2(db_,
                              "INSERT INTO entries(key, used, value) VALUES(?1, ?2, ?3) "
                              "ON CONFLICT(key) DO UPDATE SET used = excluded.used, value = excluded.value",
                              -1, &st.s, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st.s, 1, key.data(), int(key.size()), SQLITE_TRANSIENT);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st.s, 2, now_s());
  if (rc == SQLITE_OK) rc = sqlite3_bind_blob64(st.s, 3, value.data(), value.size(), SQLITE_TRANSIENT);
  if (rc == SQLITE_OK) rc = sqlite3_step(st.s);
  if (rc == SQLITE_DONE) {
    sqlite3_finalize(st.s);
    st.s = nullptr;
    std::optional<int64_t> total = query_int(db_, "SELECT bytes FROM totals");
    if (!total || *total > limits_.max_bytes) trim_locked();  // (no total: recounted there)
    return true;
  }
  note(path_, "put", db_, rc);
  sqlite3_finalize(st.s);
  st.s = nullptr;
  if (damaged(rc)) drop_locked();
  return false;
}

// Removes the least recently used entries until the values take at most 3/4 of the limit (so that
// trims are rare), in one write transaction: other processes see the cache before or after, and
// two trimming at once trim once. The total is recounted first, so a total that drifted or went
// missing (another program edited the tables) heals here.
void DiskCache::trim_locked() {
  std::optional<int64_t> total = query_int(db_, "SELECT bytes FROM totals");
  if (total && *total <= limits_.max_bytes) return;
  int rc = exec_while_busy(db_, "BEGIN IMMEDIATE");
  if (rc != SQLITE_OK) return note(path_, "trim", db_, rc);
  bool ok = exec_while_busy(db_,
                            "INSERT OR REPLACE INTO totals VALUES(0, "
                            "(SELECT COALESCE(SUM(length(value)), 0) FROM entries))") == SQLITE_OK;
  total = ok ? query_int(db_, "SELECT bytes FROM totals") : std::nullopt;
  ok = total.has_value();
  const int64_t target = limits_.max_bytes / 4 * 3;
  if (ok && *total > limits_.max_bytes) {
    std::vector<int64_t> victims;
    {
      Stmt st;
      ok = sqlite3_prepare_v2(db_, "SELECT rowid, length(value) FROM entries ORDER BY used, rowid", -1, &st.s,
                              nullptr) == SQLITE_OK;
      int64_t left = *total;
      while (ok && left > target) {
        rc = sqlite3_step(st.s);
        if (rc != SQLITE_ROW) {
          ok = rc == SQLITE_DONE;
          break;
        }
        victims.push_back(sqlite3_column_int64(st.s, 0));
        left -= sqlite3_column_int64(st.s, 1);
      }
    }
    Stmt del;
    ok = ok && sqlite3_prepare_v2(db_, "DELETE FROM entries WHERE rowid = ?1", -1, &del.s, nullptr) == SQLITE_OK;
    for (size_t i = 0; ok && i < victims.size(); i++) {
      ok = sqlite3_bind_int64(del.s, 1, victims[i]) == SQLITE_OK && sqlite3_step(del.s) == SQLITE_DONE &&
           sqlite3_reset(del.s) == SQLITE_OK;
    }
  }
  if (ok && (rc = sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr)) == SQLITE_OK) {
    sqlite3_exec(db_, "PRAGMA incremental_vacuum", nullptr, nullptr, nullptr);  // best effort
    return;
  }
  note(path_, "trim", db_, rc);  // (before the rollback replaces the error)
  sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  // A connection left inside the transaction would hold the write lock, and every later put
  // would join that transaction and never commit: start again from a new connection.
  if (!sqlite3_get_autocommit(db_)) {
    close_locked();
    tried_ = false;
  }
}

// Files written before the size limit have a table `cache` whose entries only their own builds
// can read (every key names the build), and no auto_vacuum: the table goes, and VACUUM converts
// the file (giving the freed pages back). A file is converted once; an older Sinter that creates
// `cache` again in a converted one costs only a drop. Best effort: a VACUUM that fails (another
// process reading, no disk space for its copy) leaves many free pages, and the next open tries
// again while they are more than a quarter of the file.
void DiskCache::drop_legacy_table_locked() {
  if (query_int(db_, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cache'"))
    exec_while_busy(db_, "DROP TABLE IF EXISTS cache");
  if (query_int(db_, "PRAGMA auto_vacuum") == 2) {  // incremental
    if (query_int(db_, "PRAGMA freelist_count").value_or(0) > 0)
      sqlite3_exec(db_, "PRAGMA incremental_vacuum", nullptr, nullptr, nullptr);
    return;
  }
  std::optional<int64_t> free_pages = query_int(db_, "PRAGMA freelist_count");
  std::optional<int64_t> pages = query_int(db_, "PRAGMA page_count");
  if (free_pages && pages && *free_pages * 4 > *pages)
    sqlite3_exec(db_, "PRAGMA auto_vacuum=INCREMENTAL; VACUUM", nullptr, nullptr, nullptr);
}

#ifndef SN_LIBRARY_VERSION
#define SN_LIBRARY_VERSION "unknown"
#endif

namespace {

// The GNU build ID of the loaded object (libsinter.so, or the program it is linked into) that holds
// this code, in hex; "" when it has none.
struct BuildIdSearch {
  uintptr_t addr;
  std::string id;
};

int find_build_id(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<BuildIdSearch*>(data);
  bool ours = false;
  for (int i = 0; i < info->dlpi_phnum && !ours; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    ours = ph.p_type == PT_LOAD && s->addr >= lo && s->addr < lo + ph.p_memsz;
  }
  if (!ours) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((nh->n_namesz + 3) & ~3u);
      if (desc + nh->n_descsz > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        static const char* digits = "0123456789abcdef";
        for (size_t k = 0; k < nh->n_descsz; k++) {
          auto b = static_cast<unsigned char>(desc[k]);
          s->id += digits[b >> 4];
          s->id += digits[b & 15];
        }
        return 1;
      }
      p = desc + ((nh->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

// Identifies this build of the code: its build ID, else the size and time of its file. Kernels
// depend on the code generator as much as on their AST, so a rebuilt Sinter starts a new cache
// even when its version number stays.
std::string build_identity() {
  BuildIdSearch s{reinterpret_cast<uintptr_t>(&build_identity), ""};
  dl_iterate_phdr(find_build_id, &s);
  if (!s.id.empty()) return "build." + s.id;
  Dl_info info{};
  struct stat st {};
  if (dladdr(reinterpret_cast<void*>(&build_identity), &info) && info.dli_fname && stat(info.dli_fname, &st) == 0)
    return "file." + std::to_string(st.st_size) + "." + std::to_string(st.st_mtime);
  return "unknown";
}

}  // namespace

const char* disk_cache_version() {
  static const std::string v = std::string(SN_LIBRARY_VERSION) + "+" + build_identity();
  return v.c_str();
}

std::string disk_cache_path_from_env() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (env("SN_CACHE") == "0") return "";
  std::string dir = env("SN_CACHE_DIR");
  if (dir.empty()) {
    std::string xdg = env("XDG_CACHE_HOME");
    std::string home = env("HOME");
    if (!xdg.empty() && xdg[0] == '/')
      dir = xdg + "/sinter";
    else if (!home.empty())
      dir = home + "/.cache/sinter";
    else
      return "";
  }
  return dir + "/cache.db";
}

namespace {
std::mutex& process_cache_mu() {
  static std::mutex mu;
  return mu;
}
std::shared_ptr<DiskCache>& process_cache() {
  static std::shared_ptr<DiskCache> cache;
  return cache;
}
}  // namespace

std::shared_ptr<DiskCache> disk_cache() {
  std::lock_guard<std::mutex> lk(process_cache_mu());
  std::shared_ptr<DiskCache>& c = process_cache();
  if (!c) c = std::make_shared<DiskCache>(disk_cache_path_from_env(), disk_cache_limits_from_env());
  return c;
}

void reset_disk_cache() {
  std::lock_guard<std::mutex> lk(process_cache_mu());
  process_cache().reset();
}

}  // namespace sn
