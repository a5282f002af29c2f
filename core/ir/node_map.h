// NodeMap: a map keyed by the nodes of one Graph, for the hot loops of lowering (graph_rewrite,
// Rebuilder). Node ids are dense per graph and neighbouring nodes tend to have neighbouring ids,
// so a table indexed by id beats hashing, which scatters every access and allocates per entry.
// Small maps (most rewrites touch a few nodes inside a large graph) are a short array searched
// linearly; larger ones switch to the table, paged so that a map over part of a huge graph only
// touches the pages of the ids it holds.
#pragma once
#include <array>
#include <cstddef>
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
    if (small_n_ <= kSmall) {
      for (size_t i = 0; i < small_n_; ++i)
        if (small_[i].first == k) return small_[i].second;
      return V{};
    }
    size_t p = k->id >> kPageBits;
    if (p >= pages_.size() || !pages_[p]) return V{};
    return pages_[p][k->id & kPageMask];
  }

  void set(const UOp* k, V v) {
    if (small_n_ <= kSmall) {
      for (size_t i = 0; i < small_n_; ++i) {
        if (small_[i].first == k) {
          small_[i].second = v;
          return;
        }
      }
      if (small_n_ < kSmall) {
        small_[small_n_++] = {k, v};
        return;
      }
      small_n_ = kSmall + 1;  // from now on: paged
      for (const auto& [key, value] : small_) set_paged(key, value);
    }
    set_paged(k, v);
  }

 private:
  // Up to kSmall entries: a linear search on every get and set. 8, not 32: the maps of lowering that
  // outgrow the array paid up to 32 comparisons per access before switching (ResNet-18's lowering:
  // 164.3M -> 155.8M instructions; 4 saved 1M more, for more maps on pages).
  static constexpr size_t kSmall = 8;
  static constexpr unsigned kPageBits = 10;
  static constexpr size_t kPageSize = size_t{1} << kPageBits;
  static constexpr size_t kPageMask = kPageSize - 1;

  void set_paged(const UOp* k, V v) {
    size_t p = k->id >> kPageBits;
    if (p >= pages_.size()) pages_.resize(p + 1);
    if (!pages_[p]) pages_[p] = std::make_unique<V[]>(kPageSize);  // value-initialized: all absent
    pages_[p][k->id & kPageMask] = v;
  }

  std::array<std::pair<const UOp*, V>, kSmall> small_{};
  size_t small_n_ = 0;  // > kSmall: the paged table is in use
  std::vector<std::unique_ptr<V[]>> pages_;
};

}  // namespace sn
