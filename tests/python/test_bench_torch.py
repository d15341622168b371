"""bench/torch's verdict lines: the 10 % question and the ranking question, answered from a model's rows."""
from __future__ import annotations

import importlib.util
import os
import sys

from conftest import ROOT


def _bench():
    spec = importlib.util.spec_from_file_location("torch_bench", os.path.join(ROOT, "bench", "torch_bench.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["torch_bench"] = mod
    spec.loader.exec_module(mod)
    return mod


tb = _bench()


def _row(label: str, sim: float, steps: list[float]):
    r = tb.Row(label, 2, sim, sim, [sim, sim])
    r.steps_ms = steps
    r.measured_ms = sorted(steps)[len(steps) // 2]
    return r


def test_first_ranked_and_fastest():
    rows = [_row("a", 100, [99, 101, 100]), _row("b", 110, [108, 112, 111])]
    assert tb.verdict(rows) == ["2 of 2 schedules within 10 % of their simulation (measured/simulated 1.000-1.009)",
                                "ranked first by the simulation: a, the fastest measured"]


def test_behind_within_and_outside_the_noise():
    # a ranks first, b measures faster by 6 ms: inside a's interquartile range of 10 ms, then outside 2 ms.
    noisy = [_row("a", 100, [90, 100, 106, 110, 96]), _row("b", 102, [93, 94, 95, 96, 94])]
    v = tb.verdict(noisy)
    assert v[1].startswith("ranked first by the simulation: a, 6.4 % behind the fastest measured, b (6.0 ms")
    assert v[1].endswith("interquartile range of their steps 10.0 ms): within the noise")
    quiet = [_row("a", 100, [105, 106, 106, 107, 105]), _row("b", 102, [100, 100, 101, 100, 99])]
    assert tb.verdict(quiet)[1].endswith("1.0 ms): outside the noise")


def test_misses_are_named():
    rows = [_row("a", 100, [100, 100, 100]), _row("zb", 80, [100, 100, 100]), _row("c", 105, [100, 100, 100])]
    assert tb.verdict(rows)[0] == ("2 of 3 schedules within 10 % of their simulation (measured/simulated "
                                   "0.952-1.250); outside: zb 1.250")
    assert tb.iqr([5.0]) == 0.0
