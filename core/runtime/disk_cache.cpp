#include "core/runtime/disk_cache.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <system_error>
#include <thread>

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

}  // namespace

DiskCache::DiskCache(std::string path) : path_(std::move(path)) {}

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
    const char* setup =
        "PRAGMA journal_mode=WAL;"
        "PRAGMA synchronous=NORMAL;"
        "CREATE TABLE IF NOT EXISTS cache(key TEXT PRIMARY KEY, value BLOB NOT NULL, stored INTEGER NOT NULL);";
    rc = exec_while_busy(db_, setup);
    if (rc == SQLITE_OK) return true;
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

std::optional<std::string> DiskCache::get(std::string_view key) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!open_locked()) return std::nullopt;
  Stmt st;
  int rc = sqlite3_prepare_v2(db_, "SELECT value FROM cache WHERE key = ?1", -1, &st.s, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st.s, 1, key.data(), int(key.size()), SQLITE_TRANSIENT);
  if (rc == SQLITE_OK) rc = sqlite3_step(st.s);
  if (rc == SQLITE_ROW) {
    const void* blob = sqlite3_column_blob(st.s, 0);
    int n = sqlite3_column_bytes(st.s, 0);
    if (n <= 0 || !blob) return std::string();
    return std::string(static_cast<const char*>(blob), size_t(n));
  }
  if (rc != SQLITE_DONE) {
    note(path_, "get", db_, rc);
    sqlite3_finalize(st.s);
    st.s = nullptr;
    if (damaged(rc)) drop_locked();
  }
  return std::nullopt;
}

bool DiskCache::put(std::string_view key, std::string_view value) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!open_locked()) return false;
  Stmt st;
  int rc = sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO cache(key, value, stored) VALUES(?1, ?2, ?3)", -1, &st.s,
                              nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st.s, 1, key.data(), int(key.size()), SQLITE_TRANSIENT);
  if (rc == SQLITE_OK) rc = sqlite3_bind_blob64(st.s, 2, value.data(), value.size(), SQLITE_TRANSIENT);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st.s, 3, int64_t(std::time(nullptr)));
  if (rc == SQLITE_OK) rc = sqlite3_step(st.s);
  if (rc == SQLITE_DONE) return true;
  note(path_, "put", db_, rc);
  sqlite3_finalize(st.s);
  st.s = nullptr;
  if (damaged(rc)) drop_locked();
  return false;
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
  if (!c) c = std::make_shared<DiskCache>(disk_cache_path_from_env());
  return c;
}

void reset_disk_cache() {
  std::lock_guard<std::mutex> lk(process_cache_mu());
  process_cache().reset();
}

}  // namespace sn
