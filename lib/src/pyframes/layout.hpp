#pragma once
// Where the sampler's fields live in one CPython version's structs (x86-64, release build with
// the GIL). 3.8-3.12 come from a fixed table (verified with offsetof against each version's
// headers); 3.13+ are read from the interpreter's own _Py_DebugOffsets.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "pyframes/line_table.hpp"
#include "pyframes/remote_objects.hpp"
#include "sprof/result.hpp"

namespace sprof::pyframes {

inline constexpr uint64_t kAbsent = UINT64_MAX;

// How a thread's frames are chained.
enum class FrameModel {
  frame_objects,  // <= 3.10: tstate->frame, a heap PyFrameObject, f_back chain
  cframe,         // 3.11/3.12: tstate->cframe->current_frame, _PyInterpreterFrame chain
  current_frame,  // 3.13+: tstate->current_frame, _PyInterpreterFrame chain
};

// Where "who holds the GIL" is read.
enum class GilModel {
  runtime_tstate_current,  // <= 3.11: _PyRuntime.gilstate.tstate_current
  interpreter_gil,         // 3.12+: interp->ceval.gil -> {last_holder, locked}
};

struct Layout {
  int major = 3;
  int minor = 0;
  FrameModel frame_model = FrameModel::frame_objects;
  GilModel gil_model = GilModel::runtime_tstate_current;
  LineTableFormat line_format = LineTableFormat::lnotab;

  // _PyRuntimeState
  uint64_t runtime_interpreters_head = 0;
  uint64_t runtime_tstate_current = kAbsent;

  // PyInterpreterState
  uint64_t interp_next = 0;
  uint64_t interp_threads_head = 0;
  uint64_t interp_id = kAbsent;
  uint64_t interp_modules = kAbsent;
  uint64_t interp_ceval_gil = kAbsent;  // pointer to struct _gil_runtime_state (3.12+)
  uint64_t gil_last_holder = 8;         // within struct _gil_runtime_state
  uint64_t gil_locked = 16;

  // PyThreadState
  uint64_t ts_size = 0;
  uint64_t ts_prev = 0;  // kAbsent on 2.7 (a singly linked list)
  uint64_t ts_next = 8;
  uint64_t ts_interp = 16;
  uint64_t ts_frame = kAbsent;          // <= 3.10
  uint64_t ts_cframe = kAbsent;         // 3.11, 3.12
  uint64_t cframe_current_frame = kAbsent;
  uint64_t ts_current_frame = kAbsent;  // 3.13+
  uint64_t ts_thread_id = 0;
  uint64_t ts_native_thread_id = kAbsent;  // 3.11+
  uint64_t ts_datastack_chunk = kAbsent;   // 3.11+; datastack_top follows it

  // PyFrameObject (<= 3.10)
  uint64_t frame_read_size = 0;  // bytes read per frame: through the state field
  uint64_t f_back = 24;
  uint64_t f_code = 32;
  uint64_t f_lasti = 0;
  uint64_t f_state = 0;            // f_executing (char, 1 = executing) up to 3.9 (absent in 2.7),
  bool f_state_is_executing_flag = true;  // f_state (signed char, 0 = executing) in 3.10

  // _PyInterpreterFrame (3.11+)
  uint64_t iframe_size = 80;
  uint64_t if_code = 0;
  uint64_t if_previous = 0;
  uint64_t if_instr = 0;
  uint64_t if_owner = 0;
  uint64_t if_is_entry = kAbsent;  // 3.11 only

  // _PyStackChunk (3.11+)
  uint64_t chunk_previous = 0;
  uint64_t chunk_size = 8;
  uint64_t chunk_top = 16;
  uint64_t chunk_data = 24;

  // PyCodeObject
  uint64_t code_read_size = 0;  // bytes read per code object (header, without bytecode)
  uint64_t co_firstlineno = 0;
  uint64_t co_filename = 0;
  uint64_t co_name = 0;
  uint64_t co_qualname = kAbsent;       // 3.11+
  uint64_t co_linetable = 0;            // co_lnotab before 3.10
  uint64_t co_code_adaptive = kAbsent;  // 3.11+: bytecode inside the code object
  uint64_t co_code_units = 16;          // ob_size of the code object (3.11+: code units)

  // Objects used for thread names (threading._active)
  uint64_t module_dict = 16;  // PyModuleObject.md_dict
  uint64_t dict_keys = 32;    // PyDictObject.ma_keys
  uint64_t dict_values = 40;  // PyDictObject.ma_values
  uint64_t long_digits = 24;  // PyLongObject.ob_digit
  uint64_t long_size = 16;    // ob_size (<= 3.11) or lv_tag (3.12+)
  ObjectLayout objects;
};

// The fixed layout of a version without debug offsets (2.7, 3.6-3.12), or nullopt.
std::optional<Layout> static_layout(int major, int minor);

// The layout described by a _Py_DebugOffsets block (3.13+). `bytes` starts at the cookie.
// Fails (unsupported) when the block's version uses a layout sprof does not know.
Result<Layout> layout_from_debug_offsets(std::span<const uint8_t> bytes);

inline constexpr char kDebugCookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};
inline constexpr size_t kDebugOffsetsSize313 = 584;

}  // namespace sprof::pyframes
