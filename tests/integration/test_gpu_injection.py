"""libsprof_cupti.so recording GPU activity, without a GPU.

A stand-in driver (tests/gpu/injection_host.cpp) loads the real injection library and calls its
InitializeInjection as cuInit would; the injection loads a fake libcupti (tests/gpu/fake_cupti.cpp)
through SPROF_CUPTI_PATH, which hands out the activity records of a schedule written here as real
CUDA 13.0 record structs when the injection flushes. The tests then read what the injection wrote:
$SPROF_GPU_DIR/<pid>.json (its state) and <pid>.gpu (decoded here from the documented format,
docs/gpu-activity.md, and read once more by `sprof gpu`), and the fake's log of the CUPTI calls it
received. A last group runs the toolkit's real libcupti with no driver.
"""
import json
import os
import signal
import struct
import subprocess
import time
import unittest
import zlib

from sprof_testlib import BINARY_DIR, SPROF_BIN, TempDirTestCase

LIBRARY = os.path.join(BINARY_DIR, "lib", "libsprof_cupti.so")
GPU_TESTS = os.path.join(BINARY_DIR, "tests", "gpu")
HOST = os.path.join(GPU_TESTS, "sprof_injection_host")
FAKE = os.path.join(GPU_TESTS, "libsprof_fake_cupti.so")
FAKE_OLD = os.path.join(GPU_TESTS, "libsprof_fake_cupti_old.so")
FAKE_ANCIENT = os.path.join(GPU_TESTS, "libsprof_fake_cupti_ancient.so")
FAKE_DRIVER = os.path.join(GPU_TESTS, "fake_driver")
HAS_DRIVER = os.path.exists("/proc/driver/nvidia/version")

# ---- the GPU activity file (store/gpu/gpu_activity_format.hpp), decoded independently of sprof's reader

T = "time"  # svarint start delta from the chunk's previous timed record, varint duration
LAYOUT = {
    0x02: ("process", [("pid", "u"), ("rank", "s"), ("local_rank", "s"), ("world_size", "s"),
                       ("monotonic_ns", "s"), ("realtime_ns", "s"), ("cupti_version", "u"), ("cupti", "str")]),
    0x03: ("device", [("id", "u"), ("name", "str"), ("uuid", "str"), ("sm_count", "u"), ("memory", "u"),
                      ("major", "u"), ("minor", "u")]),
    0x04: ("context", [("context", "u"), ("device", "u")]),
    0x10: ("kernel", [T, ("device", "u"), ("context", "u"), ("stream", "u"), ("correlation", "u"),
                      ("grid_x", "u"), ("grid_y", "u"), ("grid_z", "u"), ("block_x", "u"), ("block_y", "u"),
                      ("block_z", "u"), ("registers", "u"), ("static_shared", "u"), ("dynamic_shared", "u"),
                      ("name", "str")]),
    0x11: ("memcpy", [T, ("device", "u"), ("context", "u"), ("stream", "u"), ("correlation", "u"),
                      ("copy_kind", "u"), ("src_kind", "u"), ("dst_kind", "u"), ("bytes", "u"), ("flags", "u")]),
    0x12: ("memset", [T, ("device", "u"), ("context", "u"), ("stream", "u"), ("correlation", "u"),
                      ("memory_kind", "u"), ("bytes", "u")]),
    0x13: ("api", [T, ("domain", "u"), ("cbid", "u"), ("name", "str"), ("tid", "u"), ("correlation", "u"),
                   ("return_value", "u")]),
    0x14: ("sync", [T, ("type", "u"), ("context", "u"), ("stream", "s"), ("correlation", "u")]),
    0x15: ("overhead", [T, ("overhead_kind", "u"), ("name", "str")]),
    0x16: ("losses", [("dropped", "u"), ("untimed", "u"), ("other", "u")]),
}


def decode_body(body):
    pos, strings, last_start, records = 0, [], 0, []

    def varint():
        nonlocal pos
        value = shift = 0
        while True:
            b = body[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value

    def svarint():
        v = varint()
        return (v >> 1) ^ -(v & 1)

    while pos < len(body):
        tag = body[pos]
        pos += 1
        if tag == 0x01:
            n = varint()
            strings.append(body[pos:pos + n].decode())
            pos += n
            continue
        kind, fields = LAYOUT[tag]
        record = {"kind": kind}
        for field in fields:
            if field == T:
                last_start += svarint()
                record["start"] = last_start
                record["end"] = last_start + varint()
            elif field[1] == "u":
                record[field[0]] = varint()
            elif field[1] == "s":
                record[field[0]] = svarint()
            else:
                record[field[0]] = strings[varint()]
        records.append(record)
    return records


def decode_gpu_file(path):
    """(chunks: [[record]], torn_tail: bool) of a <pid>.gpu file; every chunk's CRC checked."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"SPROFGPU", data[:8]
    version, header_size = struct.unpack_from("<II", data, 8)
    assert (version, header_size) == (1, 16), (version, header_size)
    pos, chunks = header_size, []
    while pos < len(data):
        if len(data) - pos < 12:
            return chunks, True
        assert data[pos:pos + 4] == b"SPGC", (pos, data[pos:pos + 4])
        length, crc = struct.unpack_from("<II", data, pos + 4)
        body = data[pos + 12:pos + 12 + length]
        if len(body) < length:
            return chunks, True  # the process died while writing it
        assert zlib.crc32(body) == crc, "chunk at %d: bad CRC" % pos
        chunks.append(decode_body(body))
        pos += 12 + length
    return chunks, False


# ---- the schedule the fake CUPTI plays

UUID0 = "0123456789abcdef0123456789abcdef"
UUID1 = "fedcba9876543210fedcba9876543210"
MANGLED = "_Z6vecAddPfS_S_i"
DEMANGLED = "vecAdd(float*, float*, float*, int)"
NOT_DEMANGLEABLE = "_Zbogus"  # not a valid mangled name: kept as it is
TRITON = "triton_poi_fused_add_0"
TID = 4242


def schedule(until_ms, step_ms=100, incomplete_at=None):
    """(lines, expected): the fake's schedule and what the file must then hold, per record.

    One "iteration" every step_ms from 0 to until_ms: a runtime launch and its kernel, a copy, a
    memset, a sync, a driver launch and its (Triton) kernel, an overhead record. Devices and
    contexts at 0; one kernel without timestamps, a kind sprof does not keep and 5 dropped records.
    """
    lines = [
        "0 device id=0 sms=108 gmem=42505273344 major=8 minor=0 uuid=%s name=NVIDIA A100-SXM4-40GB" % UUID0,
        "0 device id=1 sms=132 gmem=85899345920 major=9 minor=0 uuid=%s name=NVIDIA H100 80GB HBM3" % UUID1,
        "0 context context=1 device=0",
        "0 context context=2 device=1",
        "5 kernel untimed=1 corr=9 name=%s" % MANGLED,
        "5 name name=a thread name",
        "5 dropped count=5",
    ]
    expected = []  # (at_ms, kind, correlation, extra)
    corr = 100
    for i, at in enumerate(range(0, until_ms + 1, step_ms)):
        name = (MANGLED, NOT_DEMANGLEABLE)[i % 2]
        lines += [
            "%d runtime cbid=211 tid=%d corr=%d start=1000 dur=5000" % (at, TID, corr),
            "%d kernel device=%d context=%d stream=7 corr=%d start=8000 dur=20000 gx=%d gy=2 gz=1 bx=128 by=1 bz=1 "
            "regs=32 ss=256 ds=1024 name=%s" % (at, i % 2, 1 + i % 2, corr, 4 + i, name),
            "%d runtime cbid=41 tid=%d corr=%d start=30000 dur=2000" % (at, TID, corr + 1),
            "%d memcpy copy=1 src=1 dst=3 bytes=%d corr=%d start=33000 dur=3000" % (at, 4096 * (i + 1), corr + 1),
            "%d memset mem=3 bytes=1024 corr=%d start=37000 dur=1000" % (at, corr + 2),
            "%d memcpy2 bytes=65536 corr=%d start=38000 dur=2000" % (at, corr + 3),
            "%d sync type=3 stream=7 corr=%d start=40000 dur=6000" % (at, corr + 4),
            "%d sync type=4 stream=-1 corr=%d start=47000 dur=1000" % (at, corr + 5),
            "%d driver cbid=307 tid=%d corr=%d start=50000 dur=3000" % (at, TID, corr + 6),
            "%d kernel corr=%d start=54000 dur=1500 name=%s" % (at, corr + 6, TRITON),
            "%d runtime cbid=9999 tid=%d corr=%d start=56000 dur=500" % (at, TID, corr + 7),
            "%d overhead okind=65536 start=57000 dur=700" % at,
        ]
        expected += [
            (at, "api", corr, {"name": "cudaLaunchKernel", "domain": 0, "cbid": 211, "offset": 1000, "dur": 5000}),
            (at, "kernel", corr, {"name": DEMANGLED if name == MANGLED else name, "device": i % 2,
                                  "context": 1 + i % 2, "grid_x": 4 + i, "offset": 8000, "dur": 20000}),
            (at, "api", corr + 1, {"name": "cudaMemcpyAsync", "domain": 0, "cbid": 41, "offset": 30000, "dur": 2000}),
            (at, "memcpy", corr + 1, {"bytes": 4096 * (i + 1), "copy_kind": 1, "offset": 33000, "dur": 3000}),
            (at, "memset", corr + 2, {"bytes": 1024, "memory_kind": 3, "offset": 37000, "dur": 1000}),
            (at, "memcpy", corr + 3, {"bytes": 65536, "copy_kind": 10, "offset": 38000, "dur": 2000}),
            (at, "sync", corr + 4, {"type": 3, "stream": 7, "offset": 40000, "dur": 6000}),
            (at, "sync", corr + 5, {"type": 4, "stream": -1, "offset": 47000, "dur": 1000}),
            (at, "api", corr + 6, {"name": "cuLaunchKernel", "domain": 1, "cbid": 307, "offset": 50000, "dur": 3000}),
            (at, "kernel", corr + 6, {"name": TRITON, "offset": 54000, "dur": 1500}),
            (at, "api", corr + 7, {"name": "runtime cbid 9999", "domain": 0, "cbid": 9999, "offset": 56000, "dur": 500}),
            (at, "overhead", None, {"name": "Buffer Flush", "offset": 57000, "dur": 700}),
        ]
        corr += 10
    if incomplete_at is not None:
        # Only a forced flush (at exit) returns it, as CUPTI does with buffers holding incomplete records.
        lines.append("%d kernel incomplete=1 corr=%d start=100 dur=900 name=%s" % (incomplete_at, corr, TRITON))
        expected.append((incomplete_at, "kernel", corr, {"name": TRITON, "offset": 100, "dur": 900, "incomplete": True}))
    return lines, expected


def key(kind, record):
    """What identifies a record of the schedule in the file (overheads have no correlation: their start)."""
    return (kind, record.get("correlation"), record.get("name")) if kind != "overhead" else (kind, None, None)


class InjectionRecordingTest(TempDirTestCase):
    def setUp(self):
        super().setUp()
        for path in (LIBRARY, HOST, FAKE):
            if not os.path.exists(path):
                self.skipTest("built without CUPTI (no %s)" % path)

    def run_host(self, scenario, env=None, lines=(), cupti=FAKE, driver=True, timeout=60):
        """Runs the stand-in driver; returns (process, its JSON lines merged, files) with files the
        profile's paths: the gpu dir, the fake's log."""
        profile = os.path.join(self.tmp, "p%d" % len(os.listdir(self.tmp)))
        gpu_dir = os.path.join(profile, "gpu")
        os.makedirs(gpu_dir)
        log = os.path.join(profile, "fake.log")
        sched = os.path.join(profile, "schedule.txt")
        with open(sched, "w") as f:
            f.write("\n".join(lines) + "\n")
        full_env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("FAKE_CUPTI_", "SPROF_CUPTI", "RANK", "LOCAL_RANK", "WORLD_SIZE"))}
        full_env.update({"CUDA_INJECTION64_PATH": LIBRARY, "SPROF_GPU_DIR": gpu_dir, "SPROF_CUPTI_PATH": cupti,
                         "FAKE_CUPTI_LOG": log, "FAKE_CUPTI_SCHEDULE": sched,
                         "RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "8"})
        full_env["LD_LIBRARY_PATH"] = FAKE_DRIVER if driver else ""
        full_env.update(env or {})
        before = time.monotonic_ns()
        proc = subprocess.run([HOST, scenario], capture_output=True, text=True, env=full_env, timeout=timeout)
        after = time.monotonic_ns()
        out = {}
        for line in proc.stdout.splitlines():
            out.update(json.loads(line))
        out["before_ns"], out["after_ns"], out["wall_s"] = before, after, (after - before) / 1e9
        self.assertEqual(proc.stderr, "", "the target's output is never touched")
        self.assertEqual(out["results"], [1, 1, 1, 1])
        self.assertLess(out["init_ms"], 1000, "InitializeInjection returns quickly")
        self.assertTrue(out["signals_ok"], "a signal was taken by a thread the injection started")
        return proc, out, {"profile": profile, "gpu": gpu_dir, "log": log}

    def state(self, files, pid):
        with open(os.path.join(files["gpu"], "%d.json" % pid)) as f:
            return json.load(f)

    def calls(self, files):
        """The fake's log: [(pid, call, args...)]."""
        if not os.path.exists(files["log"]):
            return []
        with open(files["log"]) as f:
            return [tuple(line.split()) for line in f.read().splitlines()]

    def check_file(self, files, out, expected, want, forced):
        """Decodes <pid>.gpu and checks it against the schedule's `expected` records whose key is in
        `want` (all when None): each present once with its fields and times; returns the chunks."""
        pid = out["pid"]
        chunks, torn = decode_gpu_file(os.path.join(files["gpu"], "%d.gpu" % pid))
        self.assertFalse(torn)
        self.assertGreaterEqual(len(chunks), 1)
        by_key = {}
        for chunk in chunks:
            # A chunk stands alone: its process record first, then every device and context.
            process = chunk[0]
            self.assertEqual(process["kind"], "process")
            self.assertEqual((process["pid"], process["rank"], process["local_rank"], process["world_size"]),
                             (pid, 3, 1, 8))
            self.assertEqual(process["cupti_version"], 130001)
            self.assertEqual(os.path.realpath(process["cupti"]), os.path.realpath(FAKE))
            self.assertTrue(out["before_ns"] <= process["monotonic_ns"] <= out["after_ns"])
            self.assertLess(abs(process["realtime_ns"] - process["monotonic_ns"] -
                                (time.time_ns() - time.monotonic_ns())), 10 ** 9)
            devices = {r["id"]: r for r in chunk if r["kind"] == "device"}
            self.assertEqual(sorted(devices), [0, 1])
            self.assertEqual(devices[0]["name"], "NVIDIA A100-SXM4-40GB")
            self.assertEqual((devices[0]["uuid"], devices[0]["sm_count"], devices[0]["memory"],
                              devices[0]["major"], devices[0]["minor"]), (UUID0, 108, 42505273344, 8, 0))
            self.assertEqual((devices[1]["uuid"], devices[1]["sm_count"], devices[1]["major"]), (UUID1, 132, 9))
            self.assertEqual(sorted((r["context"], r["device"]) for r in chunk if r["kind"] == "context"),
                             [(1, 0), (2, 1)])
            for r in chunk:
                if "start" in r:
                    by_key.setdefault(key(r["kind"], r), []).append(r)
        # Every timed record on CLOCK_MONOTONIC, inside the run.
        timed = [r for rs in by_key.values() for r in rs]
        for r in timed:
            self.assertTrue(out["before_ns"] <= r["start"] <= r["end"] <= out["after_ns"], r)
        # The schedule's records, each once, with the fields given; times relative to the
        # iteration's runtime launch exactly as scheduled.
        overheads = sorted(by_key.pop(("overhead", None, None), []), key=lambda r: r["start"])
        base = {}  # at_ms -> the time the fake gave at 0 ns offset
        seen_overheads = 0
        for at, kind, corr, fields in expected:
            if want is not None and at not in want:
                continue
            if fields.get("incomplete") and not forced:
                continue
            if kind == "overhead":
                record = overheads[seen_overheads]
                seen_overheads += 1
            else:
                matches = by_key.pop((kind, corr, fields["name"] if "name" in fields else None), None) or \
                    by_key.pop((kind, corr, None), None)
                self.assertIsNotNone(matches, "missing %s %s at %d ms" % (kind, corr, at))
                self.assertEqual(len(matches), 1, matches)
                record = matches[0]
            for name, value in fields.items():
                if name not in ("offset", "dur", "incomplete"):
                    self.assertEqual(record[name], value, (kind, corr, name))
            self.assertEqual(record["end"] - record["start"], fields["dur"])
            origin = base.setdefault(at, record["start"] - fields["offset"])
            self.assertEqual(record["start"] - fields["offset"], origin, (kind, corr))
            if kind == "kernel" and "grid_x" in fields:
                self.assertEqual((record["block_x"], record["registers"], record["static_shared"],
                                  record["dynamic_shared"], record["stream"]), (128, 32, 256, 1024, 7))
            if kind == "api":
                self.assertEqual(record["tid"], TID)
        if want is None:
            self.assertEqual(seen_overheads, len(overheads), "unexpected overhead records")
            self.assertEqual(by_key, {}, "records not in the schedule")
        else:
            # Later records may be there too, but only ones the schedule has.
            scheduled = {(kind, corr) for _, kind, corr, _ in expected}
            self.assertEqual([k for k in by_key if (k[0], k[1]) not in scheduled], [])
        if want is None:
            # Scheduled at_ms apart: the file's times keep the schedule's spacing.
            ats = sorted(base)
            for a, b in zip(ats, ats[1:]):
                self.assertEqual(base[b] - base[a], (b - a) * 10 ** 6)
        losses = [r for chunk in chunks for r in chunk if r["kind"] == "losses"]
        self.assertTrue(losses)
        self.assertEqual((losses[-1]["dropped"], losses[-1]["untimed"], losses[-1]["other"]), (5, 1, 1))
        return chunks

    def check_reader(self, files, chunks):
        """sprof's own reader agrees (`sprof gpu PROFILE kernels --format json`)."""
        if not SPROF_BIN:
            return
        proc = subprocess.run([SPROF_BIN, "gpu", files["profile"], "kernels", "--format", "json"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        doc = json.loads(proc.stdout)
        self.assertEqual(doc["clock"], "monotonic")
        self.assertEqual([(d["id"], d["uuid"]) for d in doc["devices"]], [(0, UUID0), (1, UUID1)])
        kernels = [r for chunk in chunks for r in chunk if r["kind"] == "kernel"]
        self.assertEqual(sum(row["instances"] for row in doc["rows"]), len(kernels))
        self.assertEqual({row["name"] for row in doc["rows"]}, {r["name"] for r in kernels})

    def test_normal_exit_flushes_everything(self):
        lines, expected = schedule(1600, incomplete_at=1500)
        proc, out, files = self.run_host("exit", lines=lines)
        self.assertEqual(proc.returncode, 0)
        state = self.state(files, out["pid"])
        self.assertEqual(state["state"], "recording")
        gpu_file = os.path.join(files["gpu"], "%d.gpu" % out["pid"])
        self.assertIn("records kernels, memcpy, peer memcpy, memset, runtime API, driver launches, synchronization, "
                      "CUPTI overhead, devices, contexts to " + gpu_file, state["detail"])
        self.assertNotIn(";", state["detail"])  # nothing missing, nothing converted
        chunks = self.check_file(files, out, expected, None, forced=True)
        self.assertGreaterEqual(len(chunks), 2, "a periodic chunk, then the last one at exit")
        records = sum(1 for chunk in chunks for r in chunk if "start" in r)
        self.assertEqual((state["records"], state["chunks"], state["dropped"], state["untimed"]),
                         (records, len(chunks), 5, 1))
        self.check_reader(files, chunks)
        # What CUPTI was asked, in order.
        calls = [c[1:] for c in self.calls(files)]
        self.assertTrue(all(c[0] == str(out["pid"]) for c in self.calls(files)))
        names = [c[0] for c in calls]
        self.assertIn(("subscribe_v2", "sprof", "0"), calls)
        self.assertIn(("thread_id_type", "1"), calls)
        first_enable = names.index("enable")
        self.assertLess(names.index("timestamp_callback"), first_enable, "the clock is set before any enable")
        self.assertLess(names.index("attribute"), first_enable)
        self.assertLess(names.index("register_callbacks"), first_enable)
        enabled = {int(c[1]) for c in calls if c[0] == "enable"}
        self.assertEqual(enabled, {10, 1, 22, 2, 5, 38, 17, 8, 9})  # no KERNEL (3), no whole DRIVER (4)
        self.assertLess(calls.index(("enable", "5", "0")), calls.index(("runtime_api", "17", "0")))
        for cbid in (17, 12, 10, 11, 317, 318):
            self.assertIn(("runtime_api", str(cbid), "0"), calls)
        for cbid in (307, 652):
            self.assertIn(("driver_api", str(cbid), "1"), calls)
        self.assertGreaterEqual(names.count("flush") - 1, 1)
        self.assertEqual(calls.count(("flush", "1")), 1, "one forced flush, at exit")
        self.assertLess(names.index("get_last_error"), calls.index(("flush", "1")))
        self.assertNotIn("finalize", names)
        self.assertNotIn("unsubscribe", names)

    def check_cut_short(self, scenario, returncode):
        lines, expected = schedule(2400, incomplete_at=300)
        proc, out, files = self.run_host(scenario, lines=lines)
        self.assertEqual(proc.returncode, returncode)
        state = self.state(files, out["pid"])
        self.assertEqual(state["state"], "recording")
        self.assertNotIn("records", state)  # the exit handler never ran
        # Chunks are written every second: what was due a second (and some slack) before the
        # end is on disk; the incomplete record, which only a forced flush returns, is not.
        run_ms = (out["end_ns"] - out["start_ns"]) / 1e6
        on_disk = {at for at, _, _, _ in expected if at <= run_ms - 1000 - 400}
        self.assertGreaterEqual(len(on_disk), 10)
        chunks = self.check_file(files, out, expected, on_disk, forced=False)
        kept = {r.get("correlation") for chunk in chunks for r in chunk}
        self.assertNotIn(expected[-1][2], kept, "the incomplete record needs a forced flush")
        calls = self.calls(files)
        self.assertNotIn(("flush", "1"), [c[1:] for c in calls])
        self.check_reader(files, chunks)

    def test_underscore_exit_loses_at_most_the_last_second(self):
        self.check_cut_short("underscore-exit", 0)

    def test_sigkill_loses_at_most_the_last_second(self):
        self.check_cut_short("sigkill", -signal.SIGKILL)

    def test_forked_child_neither_hangs_nor_writes(self):
        lines, expected = schedule(800, incomplete_at=500)
        proc, out, files = self.run_host("fork", lines=lines)
        self.assertEqual(proc.returncode, 0)
        self.assertFalse(out["child_hung"])
        self.assertEqual(out["child_exit"], 0)
        child = out["child_pid"]
        self.assertEqual(sorted(os.listdir(files["gpu"])), sorted(["%d.json" % out["pid"], "%d.gpu" % out["pid"]]))
        self.assertEqual([c for c in self.calls(files) if c[0] == str(child)], [], "the child called CUPTI")
        self.assertEqual(self.state(files, out["pid"])["state"], "recording")
        self.check_file(files, out, expected, None, forced=True)

    def failure(self, env, cupti=FAKE):
        """A run whose CUPTI fails: the program goes on and exits 0; no activity file is left."""
        proc, out, files = self.run_host("fail", env=env, cupti=cupti, lines=schedule(200)[0])
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(os.listdir(files["gpu"]), ["%d.json" % out["pid"]])
        state = self.state(files, out["pid"])
        self.assertEqual(len(state["detail"].splitlines()), 1)
        return state, [c[1:] for c in self.calls(files)]

    def test_another_tool_holds_cupti(self):
        state, calls = self.failure({"FAKE_CUPTI_SUBSCRIBE": "39"})
        self.assertEqual(state["state"], "other_tool_attached")
        self.assertIn("another CUPTI tool owns this process (nsys)", state["detail"])
        self.assertNotIn("enable", [c[0] for c in calls])

    def test_insufficient_privileges(self):
        for env in ({"FAKE_CUPTI_SUBSCRIBE": "35"}, {"FAKE_CUPTI_REGISTER_CALLBACKS": "35"}):
            state, calls = self.failure(env)
            self.assertEqual(state["state"], "insufficient_privileges", env)
            self.assertIn("NVreg_RestrictProfilingToAdminUsers=0", state["detail"])
            if "FAKE_CUPTI_REGISTER_CALLBACKS" in env:
                self.assertIn(("unsubscribe",), calls)

    def test_enable_fails(self):
        state, calls = self.failure({"FAKE_CUPTI_ENABLE": "999"})
        self.assertEqual(state["state"], "cupti_error")
        self.assertIn("enabling activity kinds failed: CUPTI_ERROR_UNKNOWN", state["detail"])
        self.assertIn(("unsubscribe",), calls)
        self.assertIn(("driver_api", "307", "0"), calls)  # switched back off
        self.assertNotIn("flush", [c[0] for c in calls])

    def test_a_missing_recording_function_is_a_state(self):
        state, calls = self.failure({}, cupti=FAKE_ANCIENT)
        self.assertEqual(state["state"], "cupti_error")
        self.assertIn("lacks cuptiActivityRegisterCallbacks: too old to record GPU activity", state["detail"])
        self.assertIn(("unsubscribe",), calls)

    def test_one_kind_refused_is_said_and_the_rest_recorded(self):
        lines, expected = schedule(300)
        _, out, files = self.run_host("exit", env={"FAKE_CUPTI_ENABLE": "999", "FAKE_CUPTI_ENABLE_KINDS": "22"},
                                      lines=lines)
        state = self.state(files, out["pid"])
        self.assertEqual(state["state"], "recording")
        self.assertIn("; not recorded: peer memcpy (CUPTI_ERROR_UNKNOWN)", state["detail"])
        self.assertNotIn("peer memcpy,", state["detail"])

    def test_realtime_clock_when_the_timestamp_callback_is_refused(self):
        # CUPTI keeps CLOCK_REALTIME; the injection converts with a measured offset.
        for cupti, env, says in ((FAKE, {"FAKE_CUPTI_TIMESTAMP_CALLBACK": "999"}, "CUPTI_ERROR_UNKNOWN"),
                                 (FAKE_OLD, {}, "missing")):
            lines, expected = schedule(1100, incomplete_at=1000)
            _, out, files = self.run_host("exit", env=env, cupti=cupti, lines=lines)
            state = self.state(files, out["pid"])
            self.assertEqual(state["state"], "recording")
            self.assertIn("times converted from CUPTI's CLOCK_REALTIME with a measured offset (timestamp callback: %s)"
                          % says, state["detail"])
            chunks, _ = decode_gpu_file(os.path.join(files["gpu"], "%d.gpu" % out["pid"]))
            timed = [r for chunk in chunks for r in chunk if "start" in r]
            self.assertEqual(len(timed), state["records"])
            slack = 50 * 10 ** 6  # the offset is measured, not exact
            for r in timed:
                self.assertTrue(out["before_ns"] - slack <= r["start"] <= out["after_ns"] + slack, r)
            if cupti == FAKE_OLD:
                self.assertIn("thread ids are CUPTI's own (no cuptiSetThreadIdType)", state["detail"])
                self.assertIn("driver launches (no cuptiActivityEnableDriverApi)", state["detail"])
                self.assertIn(("subscribe", "0"), [c[1:] for c in self.calls(files)])

    def test_past_the_buffer_cap_records_are_counted_as_dropped(self):
        # CUPTI holds all 64 buffers: it gets the discard buffer, whose records are counted, not written.
        lines, expected = schedule(300)
        _, out, files = self.run_host("exit", env={"FAKE_CUPTI_HOLD_BUFFERS": "64"}, lines=lines)
        state = self.state(files, out["pid"])
        self.assertEqual(state["state"], "recording")
        scheduled = len(expected) + 4 + 2  # + devices and contexts, the untimed kernel and the other kind
        self.assertEqual((state["records"], state["dropped"], state["untimed"]), (0, scheduled + 5, 0))
        chunks, _ = decode_gpu_file(os.path.join(files["gpu"], "%d.gpu" % out["pid"]))
        losses = [r for chunk in chunks for r in chunk if r["kind"] == "losses"]
        self.assertEqual((losses[-1]["dropped"], losses[-1]["untimed"]), (scheduled + 5, 0))

    def test_exit_does_not_wait_for_a_stuck_cupti(self):
        lines, _ = schedule(300)
        proc, out, files = self.run_host("exit", env={"FAKE_CUPTI_FORCED_FLUSH_SLEEP_MS": "20000"}, lines=lines)
        self.assertEqual(proc.returncode, 0)
        self.assertLess(out["wall_s"], 2 + 5 + 4)
        state = self.state(files, out["pid"])
        self.assertEqual(state["state"], "recording")
        self.assertIn("the last flush did not finish within 5 s of exit", state["detail"])


class RecordWithFakeCuptiTest(TempDirTestCase):
    """`sprof record --cupti FAKE -- HOST`: record sets the variables, the state reaches the manifest
    and the activity `sprof gpu` reads."""

    def test_record_reports_recording(self):
        for path in (LIBRARY, HOST, FAKE):
            if not os.path.exists(path):
                self.skipTest("built without CUPTI (no %s)" % path)
        if not SPROF_BIN:
            self.skipTest("SPROF_BIN is not set (run through ctest)")
        sched = os.path.join(self.tmp, "schedule.txt")
        with open(sched, "w") as f:
            f.write("\n".join(schedule(300)[0]) + "\n")
        out = os.path.join(self.tmp, "profile")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_CUPTI_", "SPROF_CUPTI", "CUDA_INJECTION"))}
        env.update({"LD_LIBRARY_PATH": FAKE_DRIVER, "FAKE_CUPTI_SCHEDULE": sched})
        proc = subprocess.run([SPROF_BIN, "record", "--no-system-metrics", "-o", out, "--cupti", FAKE, "--", HOST, "exit"],
                              capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(os.path.join(out, "sprof.json")) as f:
            gpu = json.load(f)["gpu"]
        self.assertEqual(len(gpu["processes"]), 1)
        process = gpu["processes"][0]
        self.assertEqual(process["state"], "recording")
        self.assertIn("GPU: pid %d: CUPTI 13.0 (%s) records kernels" % (process["pid"], FAKE), proc.stderr)
        # The exit counts reach the manifest and the summary lines.
        timed = len(schedule(300)[1])
        self.assertEqual((process["records"], process["dropped"], process["untimed"]), (timed, 5, 1))
        self.assertGreaterEqual(process["chunks"], 1)
        self.assertIn("GPU: CUPTI dropped 5 activity records", proc.stderr)
        self.assertNotIn("no GPU tracing", proc.stderr)
        view = subprocess.run([SPROF_BIN, "gpu", out, "kernels", "--format", "json"], capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(view.returncode, 0, view.stderr)
        names = {row["name"] for row in json.loads(view.stdout)["rows"]}
        self.assertEqual(names, {DEMANGLED, NOT_DEMANGLEABLE, TRITON})

        # The framework trace (smdebug's model_timeline) carries every kernel, copy and memset on
        # its device's gpu_functions lane, tied to the call that launched it.
        launches = {}
        ops = []
        for _, kind, corr, extra in schedule(300)[1]:
            if kind == "api":
                launches[corr] = extra["name"]
            elif kind in ("kernel", "memcpy", "memset"):
                ops.append((kind, corr, extra))
        events = []
        pevents = os.path.join(out, "framework", "pevents")
        for root, _, files in os.walk(pevents):
            for name in files:
                self.assertTrue(name.endswith("_model_timeline.json"), name)
                with open(os.path.join(root, name)) as f:
                    records = json.load(f)
                lanes = {r["pid"]: r["args"]["name"] for r in records if r.get("name") == "process_name" and r["pid"]}
                base = records[0]["args"]["start_time_since_epoch_in_micros"]
                for r in records:
                    if r.get("ph") == "X":
                        events.append(dict(r, lane=lanes[r["pid"]], start=base + r["ts"]))
        gpu_events = [e for e in events if e["lane"].startswith("gpu_functions-dev:")]
        self.assertEqual(len(gpu_events), len(ops))
        by_corr = {}
        for e in gpu_events:
            by_corr.setdefault(e["args"]["correlation"], []).append(e)
        for kind, corr, extra in ops:
            (e,) = [e for e in by_corr[corr] if kind != "kernel" or e["name"] == extra["name"]][:1]
            # start and end are each rounded to µs
            self.assertLessEqual(abs(e["dur"] - extra["dur"] / 1000), 1, (kind, corr))
            self.assertEqual(e["lane"], "gpu_functions-dev:%d" % extra.get("device", 0))
            if corr not in launches:  # the schedule has no API call for it
                self.assertNotIn("event_name", e["args"])
                continue
            self.assertEqual(e["args"]["event_name"], launches[corr])
            self.assertEqual(e["args"]["start_cpu_thread"], TID)
            self.assertLessEqual(e["args"]["cpu_thread_start_time"], e["start"])


class RealCuptiTest(TempDirTestCase):
    """The toolkit's real libcupti.so.13, with no NVIDIA driver on this machine."""

    def setUp(self):
        super().setUp()
        if not os.path.exists(LIBRARY) or not os.path.exists(HOST):
            self.skipTest("built without CUPTI (no %s)" % LIBRARY)
        self.cupti = None
        for path in ("/usr/local/cuda/lib64/libcupti.so.13", "/usr/local/cuda/lib/libcupti.so.13"):
            if os.path.exists(path):
                self.cupti = os.path.realpath(path)
                break
        if self.cupti is None:
            self.skipTest("no toolkit libcupti.so.13")

    def run_host(self, scenario, library_path):
        gpu_dir = os.path.join(self.tmp, "gpu-%s-%d" % (scenario, len(os.listdir(self.tmp))))
        os.makedirs(gpu_dir)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_CUPTI_", "SPROF_CUPTI"))}
        env.update({"CUDA_INJECTION64_PATH": LIBRARY, "SPROF_GPU_DIR": gpu_dir, "SPROF_CUPTI_PATH": self.cupti,
                    "LD_LIBRARY_PATH": library_path})
        started = time.monotonic()
        proc = subprocess.run([HOST, scenario], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stderr, "")
        self.assertLess(time.monotonic() - started, 15, "no hang at exit")
        out = {}
        for line in proc.stdout.splitlines():
            out.update(json.loads(line))
        self.assertEqual(out["results"], [1, 1, 1, 1])
        self.assertTrue(out["signals_ok"])
        self.assertEqual(os.listdir(gpu_dir), ["%d.json" % out["pid"]])
        with open(os.path.join(gpu_dir, "%d.json" % out["pid"])) as f:
            return out, json.load(f)

    def test_no_driver(self):
        if HAS_DRIVER:
            self.skipTest("this machine has an NVIDIA driver")
        for scenario in ("exit", "fork"):
            out, state = self.run_host(scenario, os.path.dirname(self.cupti))
            self.assertEqual(state["state"], "no_driver")
            self.assertIn("libcuda.so.1", state["detail"])
            if scenario == "fork":
                self.assertFalse(out["child_hung"])
                self.assertEqual(out["child_exit"], 0)

    def test_a_driver_that_is_not_one(self):
        # The real CUPTI cannot subscribe through a libcuda.so.1 that only has cuInit: a
        # failure state, said, then the process runs on and exits (and forks) cleanly.
        for scenario in ("exit", "fork"):
            out, state = self.run_host(scenario, FAKE_DRIVER + ":" + os.path.dirname(self.cupti))
            self.assertIn(state["state"], ("cupti_error", "driver_too_old"))
            self.assertIn("CUPTI 13.", state["detail"])
            if scenario == "fork":
                self.assertFalse(out["child_hung"])
                self.assertEqual(out["child_exit"], 0)


if __name__ == "__main__":
    unittest.main()
