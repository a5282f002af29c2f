// The persistent cache: compiled kernels and BEAM results kept across processes in one SQLite
// database (tables `entries(key, used, value)` and `totals(bytes)`; see kSchema in the .cpp).
//
// Where: $SN_CACHE_DIR/cache.db, else $XDG_CACHE_HOME/sinter/cache.db, else ~/.cache/sinter/cache.db
// (the directory is created). SN_CACHE=0 turns it off. The environment is read when the process's
// cache is first asked for (disk_cache()); the database is opened on the first get or put.
//
// Size: the values are kept under a limit (SN_CACHE_MAX_MB, default 512 MiB). A put that takes
// them over it removes the least recently used entries down to 3/4 of it, and the file shrinks with
// them. Every key names Sinter's build, so entries of an older build age out this way.
//
// The database is shared by every thread and process: WAL journal, a busy timeout of a few
// seconds, upserts (SQLite 3.24 or later). A get may write (the open's trim, marking an entry
// used), so it too can wait for another process's write, up to the busy timeout. A cache is an optimization, never a
// failure: every SQLite error makes that call a miss (get) or a no-op (put), printed at SN_DEBUG >= 2. Nothing here
// throws. A file that is not a database or is corrupt (truncated, garbage) is removed and created again.
//
// Values are opaque bytes; users put a version and a checksum in them (the CPU backend: see
// llvm_jit.cpp) and treat a value that fails to parse as a miss, then put a good one.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;

namespace sn {

struct DiskCacheLimits {
  int64_t max_bytes = int64_t(512) << 20;  // the values' bytes, all processes together
  int64_t touch_every_s = 3600;            // a read marks an entry used again at most this often
};

// The limits the environment asks for: SN_CACHE_MAX_MB (a positive integer; else the default,
// with a warning at SN_DEBUG >= 1).
DiskCacheLimits disk_cache_limits_from_env();

class DiskCache {
 public:
  // A cache over the database at `path`; "" is a disabled cache (every get misses, puts do nothing).
  explicit DiskCache(std::string path, DiskCacheLimits limits = {});
  ~DiskCache();
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  // The database file ("" when disabled).
  const std::string& path() const { return path_; }
  // Whether it is on and (once opened) the database could be opened.
  bool enabled();
  // Opens the database now if its file exists (a process after the first), so that a thread with
  // nothing else to do pays the open instead of the first get. Creates nothing.
  void open_existing();

  // The value stored under `key`, or nullopt (a miss, the cache off or unavailable).
  std::optional<std::string> get(std::string_view key);
  // Stores `value` under `key`, replacing an older value, then trims the cache if it is over its
  // limit. False when it was not stored (a value over a quarter of the limit is not).
  bool put(std::string_view key, std::string_view value);

 private:
  bool open_locked();  // opens once; false when unavailable
  void close_locked();
  void drop_locked();               // closes and deletes a damaged database; the next call creates a new one
  void drop_legacy_table_locked();  // and converts the file to incremental auto_vacuum
  void trim_locked();
  void touch_locked(std::string_view key, int64_t now);
  std::mutex mu_;
  std::string path_;
  DiskCacheLimits limits_;
  sqlite3* db_ = nullptr;
  bool tried_ = false;  // open was attempted (db_ null after it: unavailable)
};

// The database path the environment asks for ("" when SN_CACHE=0 or no directory is known).
std::string disk_cache_path_from_env();

// The process's cache, created from the environment on first call. Compilers keep the pointer
// they got when they were made.
std::shared_ptr<DiskCache> disk_cache();

// Sinter's version and build ("0.1.0+build.<GNU build ID of the binary holding this code>"): part
// of every key, so a new version, or a rebuild of the code generator, starts from an empty cache.
const char* disk_cache_version();

// Tests: forget the process's cache, so the next disk_cache() reads the environment again.
void reset_disk_cache();

}  // namespace sn
