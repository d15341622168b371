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


def _row(label: str, sim: float, steps: list[float], load: float = 1.0):
    r = tb.Row(label, 2, sim, sim, [sim, sim])
    r.load = load
    r.steps_ms = steps
    r.measured_ms = sorted(steps)[len(steps) // 2]
    return r


def test_first_ranked_and_fastest():
    rows = [_row("a", 100, [99, 101, 100]), _row("b", 110, [108, 112, 111])]
    assert tb.verdict(rows) == ["2 of 2 schedules within 10 % of their simulation (measured/simulated 1.000-1.009)",
                                "load probe (the model's sweep around the steps / in the profile), median over the "
                                "schedules 1.000 (1.000-1.000)",
                                "ranked first by the simulation: a, the fastest measured"]


def test_behind_within_and_outside_the_noise():
    # a ranks first, b measures faster by 6 ms: inside a's interquartile range of 10 ms, then outside 2 ms.
    noisy = [_row("a", 100, [90, 100, 106, 110, 96]), _row("b", 102, [93, 94, 95, 96, 94])]
    v = tb.verdict(noisy)
    assert v[2].startswith("ranked first by the simulation: a, 6.4 % behind the fastest measured, b (6.0 ms")
    assert v[2].endswith("interquartile range of their steps 10.0 ms): within the noise")
    quiet = [_row("a", 100, [105, 106, 106, 107, 105]), _row("b", 102, [100, 100, 101, 100, 99])]
    assert tb.verdict(quiet)[2].endswith("1.0 ms): outside the noise")


def test_misses_are_named():
    rows = [_row("a", 100, [100, 100, 100]), _row("zb", 80, [100, 100, 100]), _row("c", 105, [100, 100, 100])]
    assert tb.verdict(rows)[0] == ("2 of 3 schedules within 10 % of their simulation (measured/simulated "
                                   "0.952-1.250); outside: zb 1.250")
    assert tb.iqr([5.0]) == 0.0


def test_a_drifted_machine_is_said():
    rows = [_row("a", 100, [120, 121, 122], load=1.2), _row("b", 110, [130, 131, 132], load=1.25),
            _row("c", 120, [140, 141, 142], load=1.15)]
    v = tb.verdict(rows)
    assert v[0].startswith("0 of 3 schedules within 10 %")
    assert v[1] == ("load probe (the model's sweep around the steps / in the profile), median over the schedules "
                    "1.200 (1.150-1.250): more than 10 % from 1, so the machine's speed may have drifted between the "
                    "profile and the steps, which moves every ratio alike (the probe is a few seconds' sample "
                    "itself: docs/pytorch.md, \"Load drift\")")
