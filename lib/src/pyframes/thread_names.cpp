#include "pyframes/thread_names.hpp"

#include <vector>

#include "pyframes/remote_objects.hpp"

namespace sprof::pyframes {
namespace {

constexpr uint64_t kMaxEntries = 1 << 20;
constexpr uint64_t kTypeFlags = 168;        // PyTypeObject.tp_flags
constexpr uint64_t kTypeBasicSize = 32;     // PyTypeObject.tp_basicsize
constexpr uint64_t kTypeDictOffset = 288;   // PyTypeObject.tp_dictoffset
constexpr uint64_t kManagedDictFlag = 1 << 4;  // Py_TPFLAGS_MANAGED_DICT (3.11+)
constexpr uint64_t kInlineValuesFlag = 1 << 2;  // Py_TPFLAGS_INLINE_VALUES (3.13+)

// PyHeapTypeObject.ht_cached_keys: the shared keys of split instance dicts.
uint64_t cached_keys_offset(int minor) { return minor == 11 ? 872 : 880; }
// Where values[0] sits in a PyDictValues block: 3.13 put a 4-byte header (padded to 8) first.
uint64_t values_offset(int minor) { return minor >= 13 ? 8 : 0; }

}  // namespace

bool ThreadNames::for_each_keys_entry(uint64_t keys, uint64_t values, uint64_t values_off,
                                      const std::function<bool(uint64_t, uint64_t)>& visit) const {
  uint8_t head[48] = {};
  if (!mem_.read(keys, head, sizeof(head))) return false;
  uint64_t entries_at = 0;
  uint64_t count = 0;
  uint64_t entry_size = 24;  // {hash, key, value}
  uint64_t key_at = 8;
  uint64_t value_at = 16;
  if (layout_.minor >= 11) {
    uint8_t log2_index_bytes = head[9];
    uint8_t kind = head[10];
    if (log2_index_bytes > 40) return false;
    entries_at = keys + 32 + (uint64_t{1} << log2_index_bytes);
    count = load<uint64_t>(head, 24);
    if (kind != 0) {  // unicode keys: {key, value}
      entry_size = 16;
      key_at = 0;
      value_at = 8;
    }
  } else {
    uint64_t size = load<uint64_t>(head, 8);
    if (size == 0 || size > kMaxEntries * 2) return false;
    uint64_t index_bytes = size <= 0xff ? 1 : size <= 0xffff ? 2 : size <= 0xffffffff ? 4 : 8;
    entries_at = keys + 40 + size * index_bytes;
    count = load<uint64_t>(head, 32);
  }
  if (count > kMaxEntries) return false;
  std::vector<uint8_t> entries(count * entry_size);
  if (!mem_.read(entries_at, entries.data(), entries.size())) return false;
  std::vector<uint64_t> split_values;
  if (values != 0) {
    split_values.resize(count);
    if (!mem_.read(values + values_off, split_values.data(), count * 8)) return false;
  }
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t key = load<uint64_t>(entries.data(), i * entry_size + key_at);
    uint64_t value = values != 0 ? split_values[i] : load<uint64_t>(entries.data(), i * entry_size + value_at);
    if (key == 0 || value == 0) continue;  // deleted or unset
    if (!visit(key, value)) return true;
  }
  return true;
}

bool ThreadNames::for_each_item(uint64_t dict, const std::function<bool(uint64_t, uint64_t)>& visit) const {
  uint8_t head[48] = {};
  if (dict == 0 || !mem_.read(dict, head, sizeof(head))) return false;
  if (loc_.dict_type != 0 && load<uint64_t>(head, layout_.objects.ob_type) != loc_.dict_type) return false;
  uint64_t keys = load<uint64_t>(head, layout_.dict_keys);
  uint64_t values = load<uint64_t>(head, layout_.dict_values);
  return for_each_keys_entry(keys, values, values_offset(layout_.minor), visit);
}

uint64_t ThreadNames::find_str(uint64_t dict, const std::string& key) const {
  uint64_t found = 0;
  for_each_item(dict, [&](uint64_t k, uint64_t v) {
    auto s = read_str(mem_, k, layout_.objects);
    if (s && *s == key) {
      found = v;
      return false;
    }
    return true;
  });
  return found;
}

uint64_t ThreadNames::instance_attribute(uint64_t object, const std::string& name) const {
  uint64_t type = 0;
  if (!mem_.read_value(object + layout_.objects.ob_type, type) || type == 0) return 0;
  uint64_t flags = 0;
  int64_t basic_size = 0;
  int64_t dict_offset = 0;
  if (!mem_.read_value(type + kTypeFlags, flags) || !mem_.read_value(type + kTypeBasicSize, basic_size) ||
      !mem_.read_value(type + kTypeDictOffset, dict_offset)) {
    return 0;
  }
  auto match = [&](uint64_t& found) {
    return [&, this](uint64_t k, uint64_t v) {
      auto s = read_str(mem_, k, layout_.objects);
      if (s && *s == name) {
        found = v;
        return false;
      }
      return true;
    };
  };
  uint64_t found = 0;
  if (layout_.minor >= 11 && (flags & kManagedDictFlag) != 0) {
    uint64_t slot = 0;  // ((PyObject **)obj)[-3]: the dict, or (3.12) tagged values pointer
    if (!mem_.read_value(object - 24, slot)) return 0;
    uint64_t keys = 0;
    uint64_t values = 0;
    if (layout_.minor == 11) {
      if (slot != 0) return find_str(slot, name);
      if (!mem_.read_value(object - 32, values) || values == 0) return 0;
    } else if (layout_.minor == 12) {
      if (slot != 0 && (slot & 1) == 0) return find_str(slot, name);
      if (slot == 0) return 0;
      values = slot - 1;
    } else {
      if (slot != 0) return find_str(slot, name);
      if ((flags & kInlineValuesFlag) == 0 || basic_size <= 0) return 0;
      values = object + static_cast<uint64_t>(basic_size);
    }
    if (!mem_.read_value(type + cached_keys_offset(layout_.minor), keys) || keys == 0) return 0;
    for_each_keys_entry(keys, values, values_offset(layout_.minor), match(found));
    return found;
  }
  if (dict_offset <= 0) return 0;
  uint64_t dict = 0;
  if (!mem_.read_value(object + static_cast<uint64_t>(dict_offset), dict) || dict == 0) return 0;
  return find_str(dict, name);
}

std::optional<uint64_t> ThreadNames::read_uint(uint64_t object) const {
  uint8_t buf[40] = {};
  if (!mem_.read(object, buf, sizeof(buf))) return std::nullopt;
  if (loc_.long_type != 0 && load<uint64_t>(buf, layout_.objects.ob_type) != loc_.long_type) return std::nullopt;
  uint64_t ndigits = 0;
  if (layout_.minor >= 12) {
    uint64_t tag = load<uint64_t>(buf, layout_.long_size);
    if ((tag & 3) == 2) return std::nullopt;  // negative
    if ((tag & 3) == 1) return 0;             // zero
    ndigits = tag >> 3;
  } else {
    int64_t size = load<int64_t>(buf, layout_.long_size);
    if (size < 0) return std::nullopt;
    ndigits = static_cast<uint64_t>(size);
  }
  if (ndigits > 3 || layout_.long_digits + ndigits * 4 > sizeof(buf)) return std::nullopt;
  unsigned __int128 value = 0;
  for (uint64_t i = 0; i < ndigits; ++i) {
    value |= static_cast<unsigned __int128>(load<uint32_t>(buf, layout_.long_digits + i * 4) & 0x3fffffff) << (30 * i);
  }
  if (value > UINT64_MAX) return std::nullopt;
  return static_cast<uint64_t>(value);
}

std::optional<std::string> ThreadNames::lookup(uint64_t interp, uint64_t python_thread_id) {
  if (layout_.interp_modules == kAbsent) return std::nullopt;
  uint64_t modules = 0;
  if (!mem_.read_value(interp + layout_.interp_modules, modules) || modules == 0) return std::nullopt;
  uint64_t threading = find_str(modules, "threading");
  if (threading == 0) return std::nullopt;
  uint64_t module_dict = 0;
  if (!mem_.read_value(threading + layout_.module_dict, module_dict)) return std::nullopt;
  uint64_t active = find_str(module_dict, "_active");
  if (active == 0) return std::nullopt;
  uint64_t thread = 0;
  for_each_item(active, [&](uint64_t k, uint64_t v) {
    auto id = read_uint(k);
    if (id && *id == python_thread_id) {
      thread = v;
      return false;
    }
    return true;
  });
  if (thread == 0) return std::nullopt;
  uint64_t name = instance_attribute(thread, "_name");
  if (name == 0) return std::nullopt;
  return read_str(mem_, name, layout_.objects);
}

}  // namespace sprof::pyframes
