"""Tests of what ABI 1.2 added, through the idiomatic API: the memory budget
(pool_limit_bytes, memory_info's held and limit bytes) and the allocation
log with t4a_gpu.alloclog (JSON round trip, the timeline plot: matplotlib
when it is installed, else the package's own SVG). Standard library only.

Run by tests/consumers/test_python.sh on the fake driver (make check) and on
the real driver (make check-gpu).
"""
import json
import os
import tempfile
import unittest
import xml.etree.ElementTree as ET

import t4a_gpu
from t4a_gpu import abi, alloclog, errors

KiB = 1 << 10


class Fixture(unittest.TestCase):
    def setUp(self):
        self.backend = t4a_gpu.Backend()

    def tearDown(self):
        self.backend.close()


class Budget(Fixture):
    def test_a_limit_refuses_and_memory_info_says_it(self):
        with self.backend.runtime(0, pool_limit_bytes=1 << 20) as rt:
            a = rt.alloc(512 * KiB)
            with self.assertRaises(errors.ENOMEM) as cm:
                rt.alloc(600 * KiB)
            self.assertIn("pool_limit_bytes", str(cm.exception))
            m = rt.memory_info()
            self.assertEqual((m.held_bytes, m.limit_bytes), (512 * KiB, 1 << 20))
            a.close()
            b = rt.alloc(600 * KiB)  # the cached block is given back first
            b.write(bytes(range(256)) * (600 * 4))
            self.assertEqual(b.read(256), bytes(range(256)))
            self.assertEqual(rt.counters()["out_of_memory_failures"], 1)
        with self.backend.runtime(0) as rt:
            self.assertIsNone(rt.memory_info().limit_bytes)


class AllocLog(Fixture):
    def events(self, **options):
        with self.backend.runtime(0, pool_limit_bytes=1 << 20, **options) as rt:
            a = rt.alloc(100 * KiB)
            a.close()
            b = rt.alloc(100 * KiB)  # from the cache
            with self.assertRaises(errors.ENOMEM):
                rt.alloc(1 << 20)
            b.close()
            rt.cache_trim(0)
            return rt.alloc_log(), a, b

    def test_events_in_order_of_every_kind(self):
        events, a, b = self.events(alloc_log=True)
        kinds = [alloclog.KINDS[e.kind] for e in events]
        self.assertEqual(kinds, ["alloc", "free", "reuse", "out_of_memory", "free", "trim"])
        self.assertEqual([e.seq for e in events], list(range(6)))
        self.assertEqual(events[0].buffer, a.handle.bits)
        self.assertEqual(events[2].buffer, b.handle.bits)
        self.assertEqual(events[2].address, events[0].address)
        self.assertEqual(events[3].detail, abi.T4A_OUT_OF_MEMORY_LIMIT)
        self.assertEqual(events[-1].held_bytes, 0)
        self.assertTrue(all(x.time_ns <= y.time_ns for x, y in zip(events, events[1:])))

    def test_json_round_trip(self):
        events, _, _ = self.events(alloc_log=True)
        doc = json.loads(alloclog.to_json(events))
        self.assertEqual((doc["format"], doc["version"], doc["dropped"]), ("t4a-alloc-log", 1, 0))
        self.assertEqual(doc["events"][3]["kind"], "out_of_memory")
        self.assertEqual(doc["events"][3]["reason"], "limit")
        self.assertTrue(doc["events"][1]["cached"])
        self.assertEqual(doc["peak_held_bytes"], max(e.held_bytes for e in events))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "log.json")
            alloclog.write_json(events, path)
            self.assertEqual(alloclog.load_json(path), events)
        self.assertEqual(alloclog.load_json(alloclog.to_json(events)), events)
        with self.assertRaises(ValueError):
            alloclog.load_json('{"format": "other"}')

    def test_a_small_ring_drops_the_oldest(self):
        with self.backend.runtime(0, alloc_log=4) as rt:
            for _ in range(5):
                rt.alloc(4096).close()
            events = rt.alloc_log()
            self.assertEqual([e.seq for e in events], [6, 7, 8, 9])
            self.assertEqual(rt.alloc_log(8), events[2:])
            self.assertEqual(alloclog.to_dict(events[:1] + events[2:])["dropped"], 1)

    def test_the_timeline_plot(self):
        events, _, _ = self.events(alloc_log=True)
        with tempfile.TemporaryDirectory() as d:
            svg = os.path.join(d, "log.svg")
            drew = alloclog.plot(events, svg)
            self.assertEqual(drew, "matplotlib" if alloclog.have_matplotlib() else "svg")
            root = ET.parse(svg).getroot()  # well-formed either way
            self.assertTrue(root.tag.endswith("svg"))
            png = os.path.join(d, "log.png")
            if alloclog.have_matplotlib():
                self.assertEqual(alloclog.plot(events, png), "matplotlib")
                with open(png, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            else:  # ours: one dot per event, by kind
                circles = [c for c in root.iter() if c.tag.endswith("circle")]
                self.assertEqual([c.get("class") for c in circles],
                                 [alloclog.KINDS[e.kind] for e in events])
                with self.assertRaises(ImportError) as cm:
                    alloclog.plot(events, png)
                self.assertIn(".svg", str(cm.exception))
                self.assertFalse(os.path.exists(png))

    def test_a_runtime_without_a_log(self):
        with self.backend.runtime(0) as rt:
            with self.assertRaises(errors.EUNSUPPORTED) as cm:
                rt.alloc_log()
            self.assertIn("T4A_RUNTIME_ALLOC_LOG", str(cm.exception))
        with self.assertRaises(errors.EINVAL):
            self.backend.runtime(0, alloc_log=(1 << 20) + 1)


if __name__ == "__main__":
    unittest.main()
