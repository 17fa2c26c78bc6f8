// Layout from CPython's _Py_DebugOffsets (3.13+), the block at the start of _PyRuntime that
// CPython keeps for out-of-process debuggers. Its shape is stable within a minor version only,
// so the block's `version` field picks how to parse it.

#include <cstring>

#include "pyframes/layout.hpp"

namespace sprof::pyframes {
namespace {

// Field positions (in uint64 words from the start of the block) of the 3.13 layout.
struct Words313 {
  enum : size_t {
    version = 1,
    free_threaded = 2,
    rt_size = 3,
    rt_interpreters_head = 5,
    is_size = 6,
    is_id,
    is_next,
    is_threads_head,
    is_gc,
    is_imports_modules,
    is_sysdict,
    is_builtins,
    is_ceval_gil,
    is_gil_runtime_state,
    is_gil_enabled,
    is_gil_locked,
    is_gil_holder,
    ts_size,
    ts_prev,
    ts_next,
    ts_interp,
    ts_current_frame,
    ts_thread_id,
    ts_native_thread_id,
    ts_datastack_chunk,
    ts_status,
    if_size,
    if_previous,
    if_executable,
    if_instr_ptr,
    if_localsplus,
    if_owner,
    co_size,
    co_filename,
    co_name,
    co_qualname,
    co_linetable,
    co_firstlineno,
    co_argcount,
    co_localsplusnames,
    co_localspluskinds,
    co_code_adaptive,
    ob_size_,
    ob_type,
    tp_size,
    tp_name,
    tp_repr,
    tp_flags,
    tuple_size,
    tuple_ob_item,
    tuple_ob_size,
    list_size,
    list_ob_item,
    list_ob_size,
    dict_size,
    dict_ma_keys,
    dict_ma_values,
    float_size,
    float_ob_fval,
    long_size,
    long_lv_tag,
    long_ob_digit,
    bytes_size,
    bytes_ob_size,
    bytes_ob_sval,
    unicode_size,
    unicode_state,
    unicode_length,
    unicode_asciiobject_size,
    gc_size,
    gc_collecting,
    count,
  };
};
static_assert(Words313::count * 8 == kDebugOffsetsSize313);

// Offsets must lie inside the struct they describe; a block that fails this is not the
// layout we think it is (a newer version that reordered fields, or garbage).
bool inside(uint64_t offset, uint64_t size, uint64_t width = 1) {
  return size > 0 && size < (1u << 24) && offset < size && width <= size - offset;
}

}  // namespace

Result<Layout> layout_from_debug_offsets(std::span<const uint8_t> bytes) {
  if (bytes.size() < 24 || std::memcmp(bytes.data(), kDebugCookie, 8) != 0) {
    return make_error(ErrorKind::unsupported, "no _Py_DebugOffsets cookie at _PyRuntime");
  }
  auto word = [&](size_t i) { return i * 8 + 8 <= bytes.size() ? load<uint64_t>(bytes.data(), i * 8) : 0; };
  uint64_t version = word(Words313::version);
  int major = static_cast<int>((version >> 24) & 0xff);
  int minor = static_cast<int>((version >> 16) & 0xff);
  if (major != 3 || minor < 13) {
    return make_error(ErrorKind::unsupported, "_Py_DebugOffsets of unexpected version {:#x}", version);
  }
  if (word(Words313::free_threaded) != 0) {
    return make_error(ErrorKind::unsupported,
                      "free-threaded CPython {}.{} builds are not supported (sprof reads GIL builds)",
                      major, minor);
  }
  // 3.13 is the only layout known; a newer minor is read with it only if every offset is
  // consistent (the attach self-test then walks a real thread before trusting it).
  if (bytes.size() < kDebugOffsetsSize313) {
    return make_error(ErrorKind::unsupported, "short _Py_DebugOffsets block");
  }
  using W = Words313;
  Layout l;
  l.major = major;
  l.minor = minor;
  l.frame_model = FrameModel::current_frame;
  l.gil_model = GilModel::interpreter_gil;
  l.line_format = LineTableFormat::locations;

  l.runtime_interpreters_head = word(W::rt_interpreters_head);
  uint64_t is_size = word(W::is_size);
  l.interp_next = word(W::is_next);
  l.interp_threads_head = word(W::is_threads_head);
  l.interp_id = word(W::is_id);
  l.interp_modules = word(W::is_imports_modules);
  l.interp_ceval_gil = word(W::is_ceval_gil);
  uint64_t gil_base = word(W::is_gil_runtime_state);
  uint64_t gil_locked = word(W::is_gil_locked);
  uint64_t gil_holder = word(W::is_gil_holder);

  l.ts_size = word(W::ts_size);
  l.ts_prev = word(W::ts_prev);
  l.ts_next = word(W::ts_next);
  l.ts_interp = word(W::ts_interp);
  l.ts_current_frame = word(W::ts_current_frame);
  l.ts_thread_id = word(W::ts_thread_id);
  l.ts_native_thread_id = word(W::ts_native_thread_id);
  l.ts_datastack_chunk = word(W::ts_datastack_chunk);

  l.iframe_size = word(W::if_size);
  l.if_previous = word(W::if_previous);
  l.if_code = word(W::if_executable);
  l.if_instr = word(W::if_instr_ptr);
  l.if_owner = word(W::if_owner);

  l.code_read_size = word(W::co_size);
  l.co_filename = word(W::co_filename);
  l.co_name = word(W::co_name);
  l.co_qualname = word(W::co_qualname);
  l.co_linetable = word(W::co_linetable);
  l.co_firstlineno = word(W::co_firstlineno);
  l.co_code_adaptive = word(W::co_code_adaptive);

  l.objects.ob_type = word(W::ob_type);
  l.objects.unicode_state = word(W::unicode_state);
  l.objects.unicode_length = word(W::unicode_length);
  l.objects.ascii_size = word(W::unicode_asciiobject_size);
  // PyCompactUnicodeObject adds utf8_length and utf8 to the ASCII header (3.12+).
  l.objects.compact_size = l.objects.ascii_size + 16;
  l.objects.bytes_size = word(W::bytes_ob_size);
  l.objects.bytes_data = word(W::bytes_ob_sval);
  l.dict_keys = word(W::dict_ma_keys);
  l.dict_values = word(W::dict_ma_values);
  l.long_size = word(W::long_lv_tag);
  l.long_digits = word(W::long_ob_digit);

  uint64_t rt_size = word(W::rt_size);
  bool ok = inside(l.runtime_interpreters_head, rt_size, 8) && inside(l.interp_next, is_size, 8) &&
            inside(l.interp_threads_head, is_size, 8) && inside(l.interp_modules, is_size, 8) &&
            inside(l.interp_ceval_gil, is_size, 8) && inside(gil_holder, is_size, 8) &&
            inside(gil_locked, is_size, 4) && gil_holder >= gil_base && gil_locked >= gil_base &&
            inside(l.ts_prev, l.ts_size, 8) && inside(l.ts_next, l.ts_size, 8) &&
            inside(l.ts_interp, l.ts_size, 8) &&
            inside(l.ts_current_frame, l.ts_size, 8) && inside(l.ts_thread_id, l.ts_size, 8) &&
            inside(l.ts_native_thread_id, l.ts_size, 8) &&
            inside(l.ts_datastack_chunk, l.ts_size, 24) && inside(l.if_previous, l.iframe_size, 8) &&
            inside(l.if_code, l.iframe_size, 8) && inside(l.if_instr, l.iframe_size, 8) &&
            inside(l.if_owner, l.iframe_size, 1) && inside(l.co_filename, l.code_read_size, 8) &&
            inside(l.co_name, l.code_read_size, 8) && inside(l.co_qualname, l.code_read_size, 8) &&
            inside(l.co_linetable, l.code_read_size, 8) && inside(l.co_firstlineno, l.code_read_size, 4) &&
            l.co_code_adaptive >= l.code_read_size - 16 && l.co_code_adaptive <= l.code_read_size &&
            l.iframe_size <= 1024 && l.ts_size <= 65536 && l.code_read_size <= 4096 &&
            inside(l.objects.unicode_state, l.objects.ascii_size, 4) &&
            inside(l.objects.unicode_length, l.objects.ascii_size, 8) && l.objects.ob_type < 64;
  if (!ok) {
    return make_error(ErrorKind::unsupported,
                      "the _Py_DebugOffsets of Python {}.{} do not have the 3.13 layout", major, minor);
  }
  l.gil_locked = gil_locked - gil_base;
  l.gil_last_holder = gil_holder - gil_base;
  return l;
}

}  // namespace sprof::pyframes
