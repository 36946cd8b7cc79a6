#!/usr/bin/env python3
"""Writes the seed corpus of fuzz/fuzz_api.c into fuzz/corpus: short programs
that create runtimes and walk each area (memory, copies, completion, code,
cross-runtime), so the fuzzer starts from inputs that reach deep states.
Op codes are the `case` numbers of step() in fuzz_api.c."""
import os

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(here, exist_ok=True)

CREATE = [0, 0, 0, 0]            # op, slot, flags, device 0
CREATE1 = [0, 1, 0, 1]           # runtime in slot 1 on device 1
ALLOC = lambda slot, size_sel: [2, slot, 1, size_sel, 0, 0]      # amount(k=1): small
seeds = {
    "memory": CREATE + [2, 0, 3, 12, 0, 0] + [4, 0, 0, 0] + [3, 0, 0, 0] + [18, 0, 0, 0],
    "copies": CREATE + [2, 0, 2, 200, 0, 0] + [5, 0, 0, 0, 0, 2, 100] + [6, 0, 0, 0, 0, 2, 100, 0]
              + [7, 0, 0, 0, 1, 5, 1, 3, 2, 10] + [12, 0, 0],
    "pinned": CREATE + [2, 0, 3, 12, 0, 0] + [8, 0, 0, 3, 12, 0] + [10, 0, 0, 0, 0, 0, 0, 1, 100]
              + [11, 0, 0, 0, 0, 0, 0, 1, 100] + [12, 1, 0] + [9, 0, 0, 0] + [14, 1, 1, 1],
    "witness": CREATE + [2, 0, 1, 7, 0] + [5, 0, 0, 0, 1, 1, 5] + [12, 0, 0] + [13, 0, 0]
               + [15, 0, 0] + [16, 0, 0] + [14, 0, 0, 1] + [16, 0, 0] + [13, 0, 0],
    "cross": CREATE + CREATE1 + [2, 0, 0, 3, 12, 0] + [2, 1, 1, 3, 12, 0]
             + [20, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 100] + [21, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 100, 1]
             + [12, 0, 1] + [17, 0, 0, 0],
    "code": CREATE + [22, 0, 3] + [0] * 64 + [24, 0, 0, 0] + [26, 0, 0, 0, 0]
            + [27, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0] + [12, 0, 0] + [25, 0, 0, 0],
    "raw": CREATE + [30, 0, 0, 0] + [31, 0, 0],
}
for name, prog in seeds.items():
    with open(os.path.join(here, name), "wb") as f:
        f.write(bytes(b & 0xFF for b in prog))
