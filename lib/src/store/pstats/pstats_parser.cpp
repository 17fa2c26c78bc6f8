// The pstats reader: a marshal decoder that knows the one shape pstats files have,
//   {(file, line, name): (cc, nc, tt, ct, {(file, line, name): (nc, cc, tt, ct) or int})}
// and reads it in one pass straight into a ParsedStats, rejecting anything else. Because every
// position has a fixed expected type, nesting is bounded (depth 5) and no length read from the
// file sizes an allocation before the bytes behind it are known to exist.

#include <algorithm>
#include <new>

#include <fmt/format.h>

#include "store/codecs/key_hash.hpp"
#include "store/pstats/marshal_format.hpp"
#include "store/pstats/marshal_reader.hpp"
#include "store/pstats/pstats_view.hpp"

namespace sprof::store {
namespace {

using marshal::kFlagRef;
using marshal::Reader;

struct StrValue {
  std::string_view text;
  uint64_t hash = 0;
};

struct DictValue {
  uint32_t begin = 0;
  uint32_t count = 0;
  uint64_t cost = 0;  // materialization cost of its keys, see Parser::charge
};

struct FunctionValue {
  int64_t cc = 0, nc = 0;
  double tt = 0.0, ct = 0.0;
  DictValue callers;
};

// What a FLAG_REF'd object turned out to be. Tuples and dicts take their slot before their
// items are read (as marshal.c does), so a reference from inside them finds it pending.
enum class SlotKind : uint8_t { pending, str, integer, real, key, caller_value, function_value, dict };

struct Slot {
  SlotKind kind = SlotKind::pending;
  union {  // which member is set follows `kind`
    StrValue str;
    int64_t integer;
    double real;
    KeyView key;
    CallerStats caller;
    FunctionValue function;
    DictValue dict;
  };
  Slot() : integer(0) {}
};

const char* describe(SlotKind kind) {
  switch (kind) {
    case SlotKind::pending: return "a tuple or dict that is still being read";
    case SlotKind::str: return "a str";
    case SlotKind::integer: return "an int";
    case SlotKind::real: return "a float";
    case SlotKind::key: return "a (file, line, name) tuple";
    case SlotKind::caller_value: return "an (nc, cc, tt, ct) tuple";
    case SlotKind::function_value: return "a (cc, nc, tt, ct, callers) tuple";
    case SlotKind::dict: return "a callers dict";
  }
  return "an object";
}

// Callers dicts this long get a hash index for duplicate-key detection instead of a scan.
constexpr uint32_t kLinearScanLimit = 8;

// The parser's working memory, kept per thread so that reading thousands of files reuses it.
struct ParserBuffers {
  std::vector<Slot> slots;
  detail::HashSlots function_slots;
  detail::HashSlots dict_slots;
  size_t last_function_count = 0;
};

class Parser {
 public:
  Parser(std::string_view bytes, ParsedStats& out, ParserBuffers& buffers)
      : r_(bytes),
        out_(&out),
        slots_(buffers.slots),
        function_slots_(buffers.function_slots),
        dict_slots_(buffers.dict_slots),
        last_function_count_(buffers.last_function_count),
        budget_(kBaseBudget + kBudgetPerByte * bytes.size()) {}

  void run() {
    slots_.clear();
    function_slots_.reset(std::min<size_t>(last_function_count_, size_t{1} << 16));
    if (r_.size() == 0) r_.fail(0, "empty file (0 bytes); a pstats file is a marshalled dict");
    if (r_.size() > INT32_MAX) {  // also keeps every count and position within 32 bits
      r_.fail(0, fmt::format("{} bytes is more than a pstats file can hold", r_.size()));
    }
    size_t start = r_.offset();
    uint8_t code = r_.code("the stats dict");
    if ((code & ~kFlagRef) != marshal::kDict) {
      r_.fail(start, "top level is " + marshal::describe_code(code) +
                         ", expected the stats dict {(file, line, name): (cc, nc, tt, ct, "
                         "callers)}");
    }
    if (code & kFlagRef) slots_.emplace_back();  // stays pending: nothing may refer to it
    while (true) {
      size_t entry_start = r_.offset();
      if (r_.at_end()) r_.fail(entry_start, "file is truncated: the stats dict has no end marker");
      if ((r_.peek() & ~kFlagRef) == marshal::kNull) {
        r_.code("");
        break;
      }
      KeyView key = read_key("a function key of the stats dict");
      FunctionValue value = read_function_value();
      charge(entry_start, key_cost(key) + value.callers.cost);
      store_function(key, value);
    }
    if (out_->functions.empty()) {
      r_.fail(start, "the stats dict is empty (pstats refuses to load an empty profile)");
    }
    if (!r_.at_end()) {
      r_.fail(r_.offset(), fmt::format("{} bytes of trailing data after the stats dict",
                                       r_.remaining()));
    }
    double total = 0.0;
    for (const FunctionView& f : out_->functions) total += f.tt;
    out_->total_tt = total;
    last_function_count_ = out_->functions.size();
  }

 private:
  // Back-references let a small file name the same long string or callers dict many times;
  // copying those out is charged against a budget proportional to the file so that a crafted
  // file cannot make the reader allocate without bound.
  static constexpr uint64_t kBaseBudget = uint64_t{64} << 20;
  static constexpr uint64_t kBudgetPerByte = 256;
  static constexpr uint64_t kEntryOverhead = 64;

  static uint64_t key_cost(const KeyView& key) {
    return key.file.size() + key.name.size() + kEntryOverhead;
  }

  void charge(size_t at, uint64_t cost) {
    used_ += cost;
    if (used_ > budget_) [[unlikely]] over_budget(at);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void over_budget(size_t at) {
    r_.fail(at, fmt::format("back-references expand the data beyond {} bytes; refusing a file "
                            "this size ({} bytes) that claims so much",
                            budget_, r_.size()));
  }

  uint32_t reserve_slot(uint8_t code) {
    if (!(code & kFlagRef)) return UINT32_MAX;
    slots_.emplace_back();
    return static_cast<uint32_t>(slots_.size() - 1);
  }

  // The hot readers below are inlined into each other; what they say when the input is wrong is
  // built in the cold functions after them, off the path every object takes.
  [[gnu::always_inline]] const Slot& referenced(size_t start, const char* role) {
    int32_t index = r_.i32(start);
    if (index < 0 || static_cast<size_t>(index) >= slots_.size()) [[unlikely]] {
      bad_reference(start, role, index);
    }
    const Slot& slot = slots_[static_cast<size_t>(index)];
    if (slot.kind == SlotKind::pending) [[unlikely]] cyclic_reference(start, role, slot);
    return slot;
  }

  [[noreturn, gnu::cold, gnu::noinline]] void bad_reference(size_t start, const char* role, int32_t index) {
    r_.fail(start, fmt::format("{} is a back-reference to object #{}, but only {} objects "
                               "were flagged for reference before it",
                               role, index, slots_.size()));
  }
  [[noreturn, gnu::cold, gnu::noinline]] void cyclic_reference(size_t start, const char* role, const Slot& slot) {
    r_.fail(start, fmt::format("{} is a back-reference to {} (a cycle)", role, describe(slot.kind)));
  }
  [[noreturn, gnu::cold, gnu::noinline]] void wrong_type(size_t start, const char* role, uint8_t code,
                                                         const char* expected) {
    r_.fail(start, fmt::format("{} is {}, expected {}", role, marshal::describe_code(code),
                               expected));
  }
  [[noreturn, gnu::cold, gnu::noinline]] void wrong_ref(size_t start, const char* role, const Slot& slot,
                                                        const char* expected) {
    r_.fail(start, fmt::format("{} is a back-reference to {}, expected {}", role,
                               describe(slot.kind), expected));
  }
  [[noreturn, gnu::cold, gnu::noinline]] void not_utf8(size_t start, const char* role) {
    r_.fail(start, fmt::format("{} is a str that is not valid UTF-8", role));
  }
  [[noreturn, gnu::cold, gnu::noinline]] void wrong_size(size_t start, const char* role, size_t n, const char* shape) {
    r_.fail(start, fmt::format("{} is a tuple of {} item{}, expected {}", role, n, n == 1 ? "" : "s", shape));
  }
  [[noreturn, gnu::cold, gnu::noinline]] void negative_tuple_length(size_t start, int32_t n) {
    r_.fail(start, fmt::format("tuple has a negative length ({})", n));
  }
  [[noreturn, gnu::cold, gnu::noinline]] void value_missing(size_t start, const char* what) {
    r_.fail(start, what);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void callers_unterminated(size_t start) {
    r_.fail(r_.offset(), fmt::format("file is truncated: the callers dict that starts at byte {} has no end marker",
                                     start));
  }

  [[gnu::always_inline]] StrValue read_str(const char* role) {
    size_t start = r_.offset();
    uint8_t code = r_.code(role);
    StrValue value;
    switch (code & ~kFlagRef) {
      case marshal::kRef: {
        const Slot& slot = referenced(start, role);
        if (slot.kind != SlotKind::str) wrong_ref(start, role, slot, "a str");
        return slot.str;
      }
      case marshal::kShortAscii:
      case marshal::kShortAsciiInterned:
        value = ascii_text(r_.bytes(r_.u8(start), start));
        break;
      case marshal::kAscii:
      case marshal::kAsciiInterned:
        value = ascii_text(r_.bytes(r_.length32(start, "a str"), start));
        break;
      case marshal::kUnicode:
      case marshal::kInterned:
        value.text = r_.bytes(r_.length32(start, "a str"), start);
        if (!marshal::is_utf8_surrogatepass(value.text)) [[unlikely]] not_utf8(start, role);
        value.hash = hash_text(value.text);
        break;
      default: wrong_type(start, role, code, "a str");
    }
    if (code & kFlagRef) {
      Slot& slot = slots_.emplace_back();
      slot.kind = SlotKind::str;
      slot.str = value;
    }
    return value;
  }

  // marshal reads its ASCII types as Latin-1; pure ASCII (always, from CPython) stays in place.
  [[gnu::always_inline]] StrValue ascii_text(std::string_view raw) {
    TextScan scan = scan_text(raw);
    if (scan.ascii) [[likely]] return {raw, scan.hash};
    return latin1_text(raw);
  }
  [[gnu::noinline]] StrValue latin1_text(std::string_view raw) {
    std::string& owned = out_->owned_strings.emplace_back();
    marshal::append_latin1_as_utf8(raw, owned);
    return {owned, hash_text(owned)};
  }

  // An int where pstats does integer arithmetic; bool is an int to Python.
  [[gnu::always_inline]] int64_t read_int(const char* role) {
    size_t start = r_.offset();
    uint8_t code = r_.code(role);
    int64_t value = 0;
    switch (code & ~kFlagRef) {
      case marshal::kRef: {
        const Slot& slot = referenced(start, role);
        if (slot.kind != SlotKind::integer) wrong_ref(start, role, slot, "an int");
        return slot.integer;
      }
      case marshal::kTrue: return 1;  // never registered for reference, FLAG_REF or not
      case marshal::kFalse: return 0;
      case marshal::kInt: value = r_.i32(start); break;
      case marshal::kInt64: value = r_.i64(start); break;
      case marshal::kLong: value = r_.long_body(start); break;
      default: wrong_type(start, role, code, "an int");
    }
    remember_int(code, value);
    return value;
  }

  [[gnu::always_inline]] void remember_int(uint8_t code, int64_t value) {
    if (code & kFlagRef) {
      Slot& slot = slots_.emplace_back();
      slot.kind = SlotKind::integer;
      slot.integer = value;
    }
  }

  // A time: a float, or an int (Python adds either).
  [[gnu::always_inline]] double read_real(const char* role) {
    size_t start = r_.offset();
    uint8_t code = r_.code(role);
    double value = 0.0;
    switch (code & ~kFlagRef) {
      case marshal::kRef: {
        const Slot& slot = referenced(start, role);
        if (slot.kind == SlotKind::real) return slot.real;
        if (slot.kind == SlotKind::integer) return static_cast<double>(slot.integer);
        wrong_ref(start, role, slot, "a float");
      }
      case marshal::kBinaryFloat: value = r_.f64(start); break;
      case marshal::kFloat: value = r_.float_text_body(start); break;
      case marshal::kTrue: return 1.0;
      case marshal::kFalse: return 0.0;
      case marshal::kInt:
      case marshal::kInt64:
      case marshal::kLong: {
        int64_t i = code_int_body(code, start);
        remember_int(code, i);
        return static_cast<double>(i);
      }
      default: wrong_type(start, role, code, "a float");
    }
    if (code & kFlagRef) {
      Slot& slot = slots_.emplace_back();
      slot.kind = SlotKind::real;
      slot.real = value;
    }
    return value;
  }

  [[gnu::always_inline]] int64_t code_int_body(uint8_t code, size_t start) {
    switch (code & ~kFlagRef) {
      case marshal::kInt: return r_.i32(start);
      case marshal::kInt64: return r_.i64(start);
      default: return r_.long_body(start);
    }
  }

  // Reads a tuple header (after its code byte) and checks the item count.
  [[gnu::always_inline]] void tuple_size(uint8_t code, size_t start, size_t expected, const char* role,
                                         const char* shape) {
    size_t n = (code & ~kFlagRef) == marshal::kSmallTuple ? r_.u8(start)
                                                           : static_cast<size_t>(tuple_len(start));
    if (n != expected) [[unlikely]] wrong_size(start, role, n, shape);
  }
  int64_t tuple_len(size_t start) {
    int32_t n = r_.i32(start);
    if (n < 0) [[unlikely]] negative_tuple_length(start, n);
    return n;
  }

  [[gnu::always_inline]] KeyView read_key(const char* role) {
    size_t start = r_.offset();
    uint8_t code = r_.code(role);
    static constexpr const char* kShape = "a (file, line, name) tuple";
    switch (code & ~kFlagRef) {
      case marshal::kRef: {
        const Slot& slot = referenced(start, role);
        if (slot.kind != SlotKind::key) wrong_ref(start, role, slot, kShape);
        return slot.key;
      }
      case marshal::kTuple:
      case marshal::kSmallTuple: break;
      default: wrong_type(start, role, code, kShape);
    }
    tuple_size(code, start, 3, role, "(file, line, name)");
    uint32_t slot = reserve_slot(code);
    KeyView key;
    StrValue file = read_str("the file name of a function key");
    key.line = read_int("the line number of a function key");
    StrValue name = read_str("the function name of a function key");
    key.file = file.text;
    key.name = name.text;
    key.hash = combine_key_hash(file.hash, key.line, name.hash);
    if (slot != UINT32_MAX) {
      slots_[slot].kind = SlotKind::key;
      slots_[slot].key = key;
    }
    return key;
  }

  FunctionValue read_function_value() {
    const char* role = "a value of the stats dict";
    size_t start = r_.offset();
    uint8_t code = r_.code(role);
    static constexpr const char* kShape = "a (cc, nc, tt, ct, callers) tuple";
    switch (code & ~kFlagRef) {
      case marshal::kRef: {
        const Slot& slot = referenced(start, role);
        if (slot.kind != SlotKind::function_value) wrong_ref(start, role, slot, kShape);
        return slot.function;
      }
      case marshal::kTuple:
      case marshal::kSmallTuple: break;
      case marshal::kNull: value_missing(start, "the stats dict ends after a key without its value");
      default: wrong_type(start, role, code, kShape);
    }
    tuple_size(code, start, 5, role, "(cc, nc, tt, ct, callers)");
    uint32_t slot = reserve_slot(code);
    FunctionValue value;
    value.cc = read_int("the primitive call count (cc) of a function");
    value.nc = read_int("the call count (nc) of a function");
    value.tt = read_real("the total time (tt) of a function");
    value.ct = read_real("the cumulative time (ct) of a function");
    value.callers = read_callers();
    if (slot != UINT32_MAX) {
      slots_[slot].kind = SlotKind::function_value;
      slots_[slot].function = value;
    }
    return value;
  }

  DictValue read_callers() {
    const char* role = "the callers of a function";
    size_t start = r_.offset();
    uint8_t code = r_.code(role);
    switch (code & ~kFlagRef) {
      case marshal::kRef: {
        const Slot& slot = referenced(start, role);
        if (slot.kind != SlotKind::dict) wrong_ref(start, role, slot, "a dict");
        return slot.dict;
      }
      case marshal::kDict: break;
      default: wrong_type(start, role, code, "a dict");
    }
    uint32_t slot = reserve_slot(code);
    DictValue dict;
    dict.begin = static_cast<uint32_t>(out_->callers.size());
    while (true) {
      if (r_.at_end()) [[unlikely]] callers_unterminated(start);
      if ((r_.peek() & ~kFlagRef) == marshal::kNull) {
        r_.code("");
        break;
      }
      // Built whole (braces evaluate in order): a default-constructed one is zeroed first.
      KeyView key = read_key("a key of a callers dict");
      const CallerView caller{key, read_caller_value()};
      dict.cost += key_cost(caller.key);
      store_caller(dict, caller);
    }
    if (slot != UINT32_MAX) {
      slots_[slot].kind = SlotKind::dict;
      slots_[slot].dict = dict;
    }
    return dict;
  }

  [[gnu::always_inline]] CallerStats read_caller_value() {
    const char* role = "a value of a callers dict";
    size_t start = r_.offset();
    uint8_t code = r_.code(role);
    static constexpr const char* kShape = "an (nc, cc, tt, ct) tuple or an int";
    CallerStats stats;
    switch (code & ~kFlagRef) {
      case marshal::kRef: {
        const Slot& slot = referenced(start, role);
        if (slot.kind == SlotKind::caller_value) return slot.caller;
        if (slot.kind != SlotKind::integer) wrong_ref(start, role, slot, kShape);
        stats.is_count = true;
        stats.nc = slot.integer;
        return stats;
      }
      case marshal::kTrue:
      case marshal::kFalse:
        stats.is_count = true;
        stats.nc = (code & ~kFlagRef) == marshal::kTrue ? 1 : 0;
        return stats;
      case marshal::kInt:
      case marshal::kInt64:
      case marshal::kLong:
        stats.is_count = true;
        stats.nc = code_int_body(code, start);
        remember_int(code, stats.nc);
        return stats;
      case marshal::kTuple:
      case marshal::kSmallTuple: break;
      case marshal::kNull: value_missing(start, "a callers dict ends after a key without its value");
      default: wrong_type(start, role, code, kShape);
    }
    tuple_size(code, start, 4, role, "(nc, cc, tt, ct)");
    uint32_t slot = reserve_slot(code);
    stats.nc = read_int("the call count (nc) of a caller");
    stats.cc = read_int("the primitive call count (cc) of a caller");
    stats.tt = read_real("the total time (tt) of a caller");
    stats.ct = read_real("the cumulative time (ct) of a caller");
    if (slot != UINT32_MAX) {
      slots_[slot].kind = SlotKind::caller_value;
      slots_[slot].caller = stats;
    }
    return stats;
  }

  // d[key] = value: a repeated key keeps its first position and takes the last value.
  void store_function(const KeyView& key, const FunctionValue& value) {
    auto& functions = out_->functions;
    uint32_t found = function_slots_.find(
        key.hash, [&](uint32_t i) { return functions[i].key.equals(key); });
    if (found == detail::HashSlots::npos) {
      function_slots_.insert(key.hash, static_cast<uint32_t>(functions.size()));
      // Built whole: emplace_back() would zero it first, a measurable part of reading a file.
      functions.push_back(FunctionView{key, value.cc, value.nc, value.tt, value.ct, value.callers.begin,
                                       value.callers.count});
      return;
    }
    FunctionView& f = functions[found];
    f.cc = value.cc;
    f.nc = value.nc;
    f.tt = value.tt;
    f.ct = value.ct;
    f.callers_begin = value.callers.begin;
    f.callers_count = value.callers.count;
  }

  void store_caller(DictValue& dict, const CallerView& caller) {
    auto& callers = out_->callers;
    const CallerView* base = callers.data() + dict.begin;
    uint32_t found = detail::HashSlots::npos;
    if (dict.count <= kLinearScanLimit) {
      for (uint32_t i = 0; i < dict.count; ++i) {
        if (base[i].key.equals(caller.key)) {
          found = i;
          break;
        }
      }
    } else {
      found = dict_slots_.find(caller.key.hash,
                               [&](uint32_t i) { return base[i].key.equals(caller.key); });
    }
    if (found != detail::HashSlots::npos) {
      callers[dict.begin + found].stats = caller.stats;
      return;
    }
    callers.push_back(caller);
    ++dict.count;
    if (dict.count == kLinearScanLimit + 1) {
      dict_slots_.reset(4 * kLinearScanLimit);
      for (uint32_t i = 0; i < dict.count; ++i) {
        dict_slots_.insert(callers[dict.begin + i].key.hash, i);
      }
    } else if (dict.count > kLinearScanLimit + 1) {
      dict_slots_.insert(caller.key.hash, dict.count - 1);
    }
  }

  Reader r_;
  ParsedStats* out_;
  std::vector<Slot>& slots_;
  detail::HashSlots& function_slots_;
  detail::HashSlots& dict_slots_;
  size_t& last_function_count_;
  uint64_t budget_;
  uint64_t used_ = 0;
};

}  // namespace

Status parse_pstats_view(std::string_view bytes, const std::string& source, ParsedStats& out) {
  out.clear();
  try {
    thread_local ParserBuffers buffers;
    Parser(bytes, out, buffers).run();
  } catch (const marshal::DecodeError& e) {
    out.clear();
    return make_error(ErrorKind::bad_input, "{}: byte {}: {}", source, e.offset, e.message);
  } catch (const std::bad_alloc&) {
    out.clear();
    return make_error(ErrorKind::runtime, "{}: out of memory while reading pstats", source);
  }
  return {};
}

}  // namespace sprof::store
