#pragma once
// record's GPU part: offers the injection library to the command (CUDA_INJECTION64_PATH) and,
// after the run, reports what each CUDA process found and writes the manifest's "gpu" section.

#include <string>
#include <vector>

#include "sprof/gpu.hpp"
#include "sprof/launch.hpp"

namespace sprof::gpu {

class GpuRecordHook : public launch::RecordHooks {
 public:
  explicit GpuRecordHook(GpuPlan plan) : plan_(std::move(plan)) {}

  Status prepare_child(const std::filesystem::path& output_dir, launch::ChildSetup& setup) override;
  void on_start(const launch::RecordContext& context) override;
  Status on_finish(const std::filesystem::path& output_dir, store::Manifest& manifest) override;

 private:
  GpuPlan plan_;
  bool launched_ = false;
  bool driver_ = false;
};

}  // namespace sprof::gpu
