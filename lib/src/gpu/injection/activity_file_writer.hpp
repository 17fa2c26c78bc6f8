#pragma once
// $SPROF_GPU_DIR/<pid>.gpu: the file header, then whole chunks appended with write(2). A
// process that dies mid-write leaves a chunk cut short, which the reader recognises and skips.

#include <cstdint>
#include <string>

namespace sprof::gpu::injection {

class ActivityFileWriter {
 public:
  ActivityFileWriter() = default;
  ActivityFileWriter(const ActivityFileWriter&) = delete;
  ActivityFileWriter& operator=(const ActivityFileWriter&) = delete;
  ~ActivityFileWriter();

  // Creates (or empties) the file and writes its header; false with `error` said in words.
  bool open(const std::string& path, std::string& error);
  // One whole chunk; false when it could not all be written (a full disk).
  bool append(const std::string& chunk);
  // Removes the file: recording failed after it was created.
  void discard();

  const std::string& path() const { return path_; }
  uint64_t chunks() const { return chunks_; }
  uint64_t failed_writes() const { return failed_; }

 private:
  bool write_all(const std::string& bytes);

  int fd_ = -1;
  std::string path_;
  uint64_t chunks_ = 0;
  uint64_t failed_ = 0;
};

}  // namespace sprof::gpu::injection
