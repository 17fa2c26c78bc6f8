#pragma once
// pstats.Stats.add's arithmetic on one function's counts and one caller's entry, shared by
// StatsTable and PooledStatsTable so that both sum bit for bit alike.

#include <cstdint>

#include "sprof/pstats.hpp"

namespace sprof::store {

// Python ints do not overflow; int64 counts saturate rather than wrap (never reached by real
// profiles, but crafted files must not cause undefined behaviour).
inline int64_t add_counts(int64_t a, int64_t b) {
  int64_t sum;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return a > 0 ? INT64_MAX : INT64_MIN;
}

// add_callers for one caller: tuples add elementwise, ints add; a mix (TypeError in Python)
// treats the int n as (n, n, 0.0, 0.0).
inline void add_caller_stats(CallerStats& target, const CallerStats& source) {
  if (target.is_count && source.is_count) {
    target.nc = add_counts(source.nc, target.nc);
    return;
  }
  CallerStats s = source;
  if (s.is_count) s = CallerStats{false, s.nc, s.nc, 0.0, 0.0};
  if (target.is_count) target = CallerStats{false, target.nc, target.nc, 0.0, 0.0};
  target.nc = add_counts(s.nc, target.nc);
  target.cc = add_counts(s.cc, target.cc);
  target.tt = s.tt + target.tt;
  target.ct = s.ct + target.ct;
}

// Callers lists longer than this get a hash index; shorter ones are scanned.
constexpr size_t kLinearCallers = 8;

}  // namespace sprof::store
