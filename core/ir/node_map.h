// NodeMap: a map keyed by the nodes of one Graph, for the hot loops of lowering (graph_rewrite,
// Rebuilder). Node ids are dense per graph and neighbouring nodes tend to have neighbouring ids,
// so a table indexed by id beats hashing, which scatters every access and allocates per entry.
// A map takes one of three forms:
//   small    up to kSmall entries in an inline array, searched linearly (most rewrites touch a few
//            nodes inside a large graph);
//   paged    a table indexed by id, paged so that a map over part of a huge graph only touches the
//            pages of the ids it holds; a small map that outgrows its array moves here;
//   hashed   an open-addressed table of about twice the entries, for a map told its size up front
//            (reserve) that is too large for the array and too small to fill a page: the
//            heuristic's stride evaluations map a few dozen nodes, for which a zeroed page cost
//            more than the evaluation. A map that grows through its forms pays for each move, which
//            in lowering cost more than the pages it saved, so only reserve chooses this form.
#pragma once
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/ir/graph.h"

namespace sn {

// V is a pointer or another trivially copyable value; V{} means "absent".
template <class V>
class NodeMap {
 public:
  // The value for k, or V{} when k is absent.
  V get(const UOp* k) const {
    if (form_ == Form::Paged) {
      size_t p = k->id >> kPageBits;
      if (p >= pages_.size() || !pages_[p]) return V{};
      return pages_[p][k->id & kPageMask];
    }
    if (form_ == Form::Small) {
      for (size_t i = 0; i < n_; ++i)
        if (small_[i].first == k) return small_[i].second;
      return V{};
    }
    return hashed_[slot(k)].second;  // an empty slot holds V{}
  }

  void set(const UOp* k, V v) {
    if (form_ == Form::Paged) return set_paged(k, v);
    if (form_ == Form::Small) {
      for (size_t i = 0; i < n_; ++i) {
        if (small_[i].first == k) {
          small_[i].second = v;
          return;
        }
      }
      if (n_ < kSmall) {
        small_[n_++] = {k, v};
        return;
      }
      small_to_pages();
      return set_paged(k, v);
    }
    Entry& e = hashed_[slot(k)];
    if (e.first != k) {
      e.first = k;
      if (++n_ * 2 > capacity()) {  // (only when reserve was told too few)
        e.second = v;
        return grow_hashed();
      }
    }
    e.second = v;
  }

  // Prepares an empty map for about n entries: the form that holds them at least cost. Optional.
  void reserve(size_t n) {
    if (form_ != Form::Small || n_ != 0 || n <= kSmall || n > kHashedMax) return;
    make_hashed(std::bit_ceil(2 * n));
  }

 private:
  using Entry = std::pair<const UOp*, V>;
  enum class Form : uint8_t { Small, Hashed, Paged };
  // 8, not 32: the maps of lowering that outgrow the array paid up to 32 comparisons per access
  // before switching (ResNet-18's lowering: 164.3M -> 155.8M instructions).
  static constexpr size_t kSmall = 8;
  static constexpr size_t kHashedMax = 128;  // entries; at 256 slots a table is about half a page
  static constexpr unsigned kPageBits = 10;
  static constexpr size_t kPageSize = size_t{1} << kPageBits;
  static constexpr size_t kPageMask = kPageSize - 1;

  size_t capacity() const { return mask_ + 1; }
  // k's slot in the hashed table, or the empty slot where it would go. Fibonacci hashing: the high
  // bits of id times 2^64/phi, so ids in a stride pattern still spread over the table.
  size_t slot(const UOp* k) const {
    size_t i = size_t((uint64_t(k->id) * 0x9e3779b97f4a7c15ULL) >> shift_);
    while (hashed_[i].first && hashed_[i].first != k) i = (i + 1) & mask_;
    return i;
  }

  void make_hashed(size_t slots) {
    hashed_ = std::make_unique<Entry[]>(slots);  // value-initialized: all empty
    shift_ = uint8_t(64 - std::countr_zero(slots));
    mask_ = uint32_t(slots - 1);
    form_ = Form::Hashed;
  }

  [[gnu::noinline]] void grow_hashed() {
    std::unique_ptr<Entry[]> old = std::move(hashed_);
    const size_t old_slots = capacity();
    if (n_ > kHashedMax) {
      form_ = Form::Paged;
      for (size_t i = 0; i < old_slots; ++i)
        if (old[i].first) set_paged(old[i].first, old[i].second);
      return;
    }
    make_hashed(2 * old_slots);
    for (size_t i = 0; i < old_slots; ++i)
      if (old[i].first) hashed_[slot(old[i].first)] = old[i];
  }

  [[gnu::noinline]] void small_to_pages() {
    form_ = Form::Paged;
    for (const auto& [key, value] : small_) set_paged(key, value);
  }

  void set_paged(const UOp* k, V v) {
    size_t p = k->id >> kPageBits;
    if (p >= pages_.size()) pages_.resize(p + 1);
    if (!pages_[p]) pages_[p] = std::make_unique<V[]>(kPageSize);  // value-initialized: all absent
    pages_[p][k->id & kPageMask] = v;
  }

  std::array<Entry, kSmall> small_{};
  size_t n_ = 0;  // entries while small or hashed
  Form form_ = Form::Small;
  uint8_t shift_ = 64;  // hashed: 64 - log2(slots)
  uint32_t mask_ = 0;   // hashed: slots - 1
  std::unique_ptr<Entry[]> hashed_;
  std::vector<std::unique_ptr<V[]>> pages_;
};

}  // namespace sn
