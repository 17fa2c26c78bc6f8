#pragma once
// Recording GPU activity through a CUPTI subscription: CUPTI set up for this process (clock,
// thread ids, buffers, activity kinds), one writer thread that flushes, converts and appends a
// chunk to $SPROF_GPU_DIR/<pid>.gpu at least once a second, a forced flush at exit in the
// owner process, and nothing at all in a forked child.

#include <string>

#include "gpu/injection/cupti_library.hpp"
#include "gpu/injection/process_state.hpp"

namespace sprof::gpu::injection {

// Starts recording through `subscriber`, which it keeps. Returns the state to write: "recording"
// (its detail says what is traced and where), or a failure state, the subscription released.
// `from` names the CUPTI in messages ("CUPTI 13.0 (/path)"). Called once per process, from
// InitializeInjection. Never throws.
ProcessState start_recording(const LoadedCupti& cupti, CUpti_SubscriberHandle subscriber, const std::string& dir,
                             ProcessState state, const std::string& from);

}  // namespace sprof::gpu::injection
