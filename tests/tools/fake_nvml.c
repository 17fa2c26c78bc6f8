/* A stand-in for libnvidia-ml.so.1 with two GPUs reporting fixed numbers, so the system monitor's
 * NVML path (dlopen, symbol lookup, per-GPU records) runs on machines without a GPU.
 * GPU i: utilization 40 + 10·i %, memory used 250·(i+1) of 1000 bytes. When
 * $SPROF_FAKE_NVML_UTILIZATION names a file, both GPUs report the number it holds instead, read at
 * every query: a test's job can starve its "GPUs" halfway. */

#include <stdio.h>
#include <stdlib.h>

typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
const char* nvmlErrorString(int rc) { return rc == 0 ? "Success" : "Fake error"; }

int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = 2;
  return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index >= 2) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *device = (void*)(unsigned long)(index + 1);
  return 0;
}

int nvmlDeviceGetUtilizationRates(void* device, nvmlUtilization_t* utilization) {
  unsigned long index = (unsigned long)device - 1;
  utilization->gpu = 40 + 10 * (unsigned int)index;
  const char* path = getenv("SPROF_FAKE_NVML_UTILIZATION");
  FILE* file = path ? fopen(path, "r") : NULL;
  if (file) {
    unsigned int value = 0;
    if (fscanf(file, "%u", &value) == 1) utilization->gpu = value;
    fclose(file);
  }
  utilization->memory = 5;
  return 0;
}

int nvmlDeviceGetMemoryInfo(void* device, nvmlMemory_t* memory) {
  unsigned long index = (unsigned long)device - 1;
  memory->total = 1000;
  memory->used = 250 * (index + 1);
  memory->free = memory->total - memory->used;
  return 0;
}
