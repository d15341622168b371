"""The checker's deadlock verdicts against PyTorch's runtime (tests/python/deadlock_cases.py): under
the posted semantics every case the checker calls valid completes in PyTorch with exact gradients,
and every case it calls deadlocking hangs there (every rank's watchdog reports its last action)
while `pipesmith verify` names the cycle. The other semantics disagree with PyTorch on cases listed
here, which pins that PyTorch follows *posted*."""
import pytest

import deadlock_cases as dc
from conftest import cli, model_path, torchrun


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return dc.run_all(cli, torchrun, str(tmp_path_factory.mktemp("deadlock")), model_path("llama2-7b"))


def test_the_set_is_large_enough():
    assert len(dc.VALID) >= 20 and len(dc.DEADLOCK) >= 10


def test_checker_under_posted_agrees_with_pytorch_on_every_case(results):
    verdicts, outcome = results
    wrong = []
    for name in dc.VALID:
        valid, _, others = verdicts[("valid", name)]["posted"]
        if not valid or others:
            wrong.append(f"valid/{name}: checker says {verdicts[('valid', name)]['posted']}")
        if outcome[("valid", name)][0] != "completed, gradient-exact":
            wrong.append(f"valid/{name}: PyTorch {outcome[('valid', name)][0]}:\n{outcome[('valid', name)][2][-3000:]}")
    for name in dc.DEADLOCK:
        valid, message, others = verdicts[("deadlock", name)]["posted"]
        if valid or others or "wait for each other in a cycle" not in message:
            wrong.append(f"deadlock/{name}: checker says {verdicts[('deadlock', name)]['posted']}")
        if outcome[("deadlock", name)][0] != "hung (watchdog)":
            wrong.append(f"deadlock/{name}: PyTorch {outcome[('deadlock', name)][0]}:\n"
                         f"{outcome[('deadlock', name)][2][-3000:]}")
    assert not wrong, "\n".join(wrong)


def test_the_other_semantics_call_cases_deadlocks_that_pytorch_completes(results):
    verdicts, _ = results
    for sem in ("rendezvous", "grouped", "buffered"):
        disagree = [n for n in dc.VALID if not verdicts[("valid", n)][sem][0]]
        assert disagree, f"{sem} agrees with PyTorch on every case: the set does not tell them apart"
