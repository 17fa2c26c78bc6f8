// Fixed layouts for CPython 2.7 and 3.6-3.12 on x86-64 Linux (release builds with the GIL).
// Every value was checked with offsetof/sizeof against the installed headers of 2.7.18, 3.6.15,
// 3.7.16, 3.8.18, 3.9.18, 3.10.13, 3.11.7 and 3.12.1; Debian's 3.11.2 has the same offsets as
// 3.11.7. The structs are those of python/cpython at the tags v2.7.18 ... v3.12.1: PyThreadState
// (Include/pystate.h, later Include/cpython/pystate.h), PyInterpreterState and _PyRuntimeState
// (Include/internal/pycore_interp.h and pycore_runtime.h from 3.9, Include/pystate.h and
// Include/internal/ before), PyFrameObject (Include/frameobject.h, Include/cpython/frameobject.h),
// _PyInterpreterFrame (3.11+, Include/internal/pycore_frame.h) and PyCodeObject (Include/code.h,
// Include/cpython/code.h).

#include "pyframes/layout.hpp"

namespace sprof::pyframes {
namespace {

Layout frame_object_era(int minor) {
  Layout l;
  l.minor = minor;
  l.frame_model = FrameModel::frame_objects;
  l.gil_model = GilModel::runtime_tstate_current;
  l.line_format = minor >= 10 ? LineTableFormat::table_310 : LineTableFormat::lnotab;
  l.interp_next = 0;
  l.interp_threads_head = 8;
  l.ts_next = 8;
  l.ts_interp = 16;
  l.ts_frame = 24;
  l.ts_thread_id = 176;
  l.f_back = 24;
  l.f_code = 32;
  l.objects.ascii_size = 48;
  l.objects.compact_size = 72;
  l.long_size = 16;
  l.long_digits = 24;
  return l;
}

Layout interpreter_frame_era(int minor) {
  Layout l;
  l.minor = minor;
  l.line_format = LineTableFormat::locations;
  l.ts_next = 8;
  l.ts_interp = 16;
  l.iframe_size = 80;
  l.co_qualname = 128;
  l.co_filename = 112;
  l.co_name = 120;
  l.co_linetable = 136;
  return l;
}

}  // namespace

std::optional<Layout> static_layout(int major, int minor) {
  if (major == 2 && minor == 7) {
    // 2.7: no _PyRuntime (interp_head/_PyThreadState_Current globals), str is PyStringObject,
    // no f_executing, unsigned lnotab.
    Layout l = frame_object_era(7);
    l.major = 2;
    l.line_format = LineTableFormat::lnotab_unsigned;
    l.interp_modules = 16;
    l.interp_id = kAbsent;
    l.ts_size = 168;
    l.ts_prev = kAbsent;
    l.ts_next = 0;
    l.ts_interp = 8;
    l.ts_frame = 16;
    l.ts_thread_id = 144;
    l.f_lasti = 120;
    l.f_state = kAbsent;
    l.frame_read_size = 128;
    l.co_firstlineno = 96;
    l.co_filename = 80;
    l.co_name = 88;
    l.co_linetable = 104;
    l.code_read_size = 128;
    l.objects.py2_strings = true;
    l.objects.bytes_size = 16;
    l.objects.bytes_data = 36;
    return l;
  }
  if (major != 3) return std::nullopt;
  switch (minor) {
    case 6: {
      // 3.6: no _PyRuntime yet (interp_head/_PyThreadState_Current globals).
      Layout l = frame_object_era(6);
      l.interp_id = kAbsent;
      l.interp_modules = 16;
      l.ts_size = 2272;  // includes a 255-slot ABI padding array
      l.ts_thread_id = 152;
      l.f_lasti = 120;
      l.f_state = 132;  // f_executing
      l.frame_read_size = 136;
      l.co_firstlineno = 36;
      l.co_filename = 96;
      l.co_name = 104;
      l.co_linetable = 112;
      l.code_read_size = 144;
      return l;
    }
    case 7: {
      Layout l = frame_object_era(7);
      l.runtime_interpreters_head = 24;
      l.runtime_tstate_current = 1480;  // 3.7.4+; 3.7.0-3.7.3 use 1392 (set by the caller)
      l.interp_id = 16;
      l.interp_modules = 40;
      l.ts_size = 280;
      l.f_lasti = 104;
      l.f_state = 116;
      l.frame_read_size = 120;
      l.co_firstlineno = 36;
      l.co_filename = 96;
      l.co_name = 104;
      l.co_linetable = 112;
      l.code_read_size = 144;
      return l;
    }
    case 8:
    case 9: {
      Layout l = frame_object_era(minor);
      l.runtime_interpreters_head = 32;
      l.runtime_tstate_current = minor == 8 ? 1368 : 568;
      l.interp_id = minor == 8 ? 16 : 24;
      l.interp_modules = minor == 8 ? 56 : 856;
      l.ts_size = 264;
      l.f_lasti = 104;
      l.f_state = 116;  // f_executing
      l.frame_read_size = 120;
      l.co_firstlineno = 40;
      l.co_filename = 104;
      l.co_name = 112;
      l.co_linetable = 120;  // co_lnotab
      l.code_read_size = 176;
      return l;
    }
    case 10: {
      Layout l = frame_object_era(10);
      l.runtime_interpreters_head = 32;
      l.runtime_tstate_current = 568;
      l.interp_id = 24;
      l.interp_modules = 856;
      l.ts_size = 280;
      l.f_lasti = 96;
      l.f_state = 108;
      l.f_state_is_executing_flag = false;
      l.frame_read_size = 112;
      l.co_firstlineno = 40;
      l.co_filename = 104;
      l.co_name = 112;
      l.co_linetable = 120;
      l.code_read_size = 176;
      return l;
    }
    case 11: {
      Layout l = interpreter_frame_era(11);
      l.frame_model = FrameModel::cframe;
      l.gil_model = GilModel::runtime_tstate_current;
      l.runtime_interpreters_head = 40;
      l.runtime_tstate_current = 576;
      l.interp_next = 0;
      l.interp_threads_head = 16;
      l.interp_id = 48;
      l.interp_modules = 888;
      l.ts_size = 360;
      l.ts_cframe = 56;
      l.cframe_current_frame = 8;
      l.ts_thread_id = 152;
      l.ts_native_thread_id = 160;
      l.ts_datastack_chunk = 296;
      l.if_code = 32;
      l.if_previous = 48;
      l.if_instr = 56;
      l.if_is_entry = 68;
      l.if_owner = 69;
      l.co_firstlineno = 72;
      l.co_code_adaptive = 184;
      l.code_read_size = 192;
      l.objects.ascii_size = 48;
      l.objects.compact_size = 72;
      l.long_size = 16;
      l.long_digits = 24;
      return l;
    }
    case 12: {
      Layout l = interpreter_frame_era(12);
      l.frame_model = FrameModel::cframe;
      l.gil_model = GilModel::interpreter_gil;
      l.runtime_interpreters_head = 40;
      l.interp_next = 0;
      l.interp_threads_head = 72;
      l.interp_id = 8;
      l.interp_modules = 944;
      l.interp_ceval_gil = 384;
      l.gil_last_holder = 8;
      l.gil_locked = 16;
      l.ts_size = 288;
      l.ts_cframe = 56;
      l.cframe_current_frame = 0;
      l.ts_thread_id = 136;
      l.ts_native_thread_id = 144;
      l.ts_datastack_chunk = 232;
      l.if_code = 0;
      l.if_previous = 8;
      l.if_instr = 56;
      l.if_owner = 70;
      l.co_firstlineno = 68;
      l.co_code_adaptive = 192;
      l.code_read_size = 200;
      l.objects.ascii_size = 40;
      l.objects.compact_size = 56;
      l.long_size = 16;  // lv_tag
      l.long_digits = 24;
      return l;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace sprof::pyframes
