"""GPU activity for test workloads that run under `sprof record` on a machine without a GPU:
gpu/<pid>.gpu files in docs/gpu-activity.md's format, with the launches, kernels, copies and syncs a
workload says it made, so that every reader of them (views, diff, tables, traces) sees a recording.
"""
import os
import struct
import threading

from test_gpu_callsites import Chunk, svarint, varint


class GpuFile:
    """One process's activity, written as libsprof_cupti.so writes it: the file header, then a chunk
    per flush(); times are time.monotonic_ns()."""

    def __init__(self, directory):
        self.tid = threading.get_native_id()
        self.engine_tid = self.tid + 100000  # autograd's engine thread
        self.path = os.path.join(directory, "%d.gpu" % os.getpid())
        os.makedirs(directory, exist_ok=True)
        with open(self.path, "wb") as f:
            f.write(b"SPROFGPU" + struct.pack("<II", 1, 16))
        self.records, self.correlation, self.stream_free = [], 0, 0

    def call(self, name, cbid, start, end, tid=None):
        self.correlation += 1
        self.records.append(("api", start, end, name, cbid, tid or self.tid, self.correlation))
        return self.correlation

    def on_stream(self, after, duration):
        start = max(after, self.stream_free) + 3000
        self.stream_free = start + duration
        return start, start + duration

    def launch(self, at, kernel, duration_ns, tid=None):
        correlation = self.call("cudaLaunchKernel", 211, at, at + 8000, tid)
        start, end = self.on_stream(at + 8000, duration_ns)
        self.records.append(("kernel", start, end, correlation, kernel))

    def copy_to_host(self, start, end):
        correlation = self.call("cudaMemcpy", 31, start, end)
        copy_start, copy_end = self.on_stream(start, 40000)
        self.records.append(("memcpy", copy_start, min(copy_end, end - 1000), correlation))

    def synchronize(self, start, end):
        correlation = self.call("cudaDeviceSynchronize", 165, start, end)
        self.records.append(("sync", max(start, self.stream_free), end - 1000, correlation))

    def flush(self):
        chunk = Chunk(os.getpid())
        name, uuid = chunk.string("NVIDIA H100 80GB HBM3"), chunk.string("0" * 32)
        chunk.body += bytes([0x03]) + varint(0) + varint(name) + varint(uuid) + varint(132)
        chunk.body += varint(80 * 2**30) + varint(9) + varint(0)
        chunk.body += bytes([0x04]) + varint(1) + varint(0)
        for r in sorted(self.records, key=lambda r: r[1]):
            if r[0] == "api":
                _, start, end, name, cbid, tid, correlation = r
                name = chunk.string(name)  # defined before the record that uses it
                chunk.body += bytes([0x13]) + chunk.time(start, end) + varint(0) + varint(cbid)
                chunk.body += varint(name) + varint(tid) + varint(correlation) + varint(0)
            elif r[0] == "kernel":
                chunk.kernel(r[1], r[2], r[3], r[4])
            elif r[0] == "memcpy":
                chunk.body += bytes([0x11]) + chunk.time(r[1], r[2]) + varint(0) + varint(1) + varint(7)
                chunk.body += varint(r[3]) + varint(2) + varint(3) + varint(1) + varint(4) + varint(0)
            else:
                chunk.body += bytes([0x14]) + chunk.time(r[1], r[2]) + varint(4) + varint(1) + svarint(-1)
                chunk.body += varint(r[3])
        with open(self.path, "ab") as f:
            f.write(chunk.framed())
        self.records = []
