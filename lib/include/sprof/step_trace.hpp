#pragma once
// The step timeline written as smdebug's framework trace (the model_timeline files that smdebug's
// readers and the rules take steps from).

#include <filesystem>
#include <vector>

#include "sprof/gpu_trace.hpp"
#include "sprof/manifest.hpp"
#include "sprof/result.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::timeline {

// Writes the timeline as smdebug's framework trace, model_timeline files under
// framework/pevents/, one node per process with events (its node id "<pid>-<host>" as in
// sprof.json); a DataLoader worker's lane event goes to its parent's node. Events:
//   Step:ModeKeys.<MODE>      X, args pid, step_num (the mode's step, a string as smdebug writes it)
//   forwardpassend            i on the step's lane at FORWARD_PASS_END, args pid, step_num
//   DataLoaderIterInitialize  X "<iterator class>.__init__", args num_workers, pin_memory, pid
//   DataLoaderIter            X "<iterator class>::GetNext" per next() (the wait for a batch), args pid
//   DataLoaderWorker          X "_worker_loop" per worker, args pid (the worker's), worker_id
//   <domain> (or "sprof")     i per counter value (args value, pid, tid) and instant marker
//   gpu_functions-dev:<N>     X per kernel, copy and memset the process ran on its device N (as
//                             smdebug's PyTorch hook writes kernels), args pid, device, stream,
//                             correlation, event_name (the launching CUDA call), start_cpu_thread
//                             and cpu_thread_start_time (its thread and start, µs), step_num (the
//                             step the launch fell in, when one did)
// Times are epoch µs from the manifest's (monotonic, realtime) pair; GPU times are on the same
// monotonic clock. `gpu` may be null. Returns the files written.
Result<std::vector<std::filesystem::path>> write_step_trace(const std::filesystem::path& profile_dir,
                                                            const store::Manifest& manifest,
                                                            const StepTimeline& timeline,
                                                            const store::GpuTrace* gpu = nullptr);

}  // namespace sprof::timeline
