"""What PyTorch's pipelining runtime (2.13) silently gets wrong, pinned by running it, and what
pipesmith does about it: the export renumbers microbatches so the last stage runs its forwards in
order, and the runner refuses a CSV that breaks one of these rules (exit 2, naming the cell)."""
import json
import os
import shutil

import pytest

from conftest import cli, model_path, run_plans, torchrun
from pipesmith.torch.plan import PlanError, load_plan

# Valid under the checker, but the last stage (rank 1) runs F1 before F0.
OUT_OF_ORDER = "0F0,0F1,0B0,0B1\n1F1,1F0,1B0,1B1\n"


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rules")
    raw_csv = tmp / "out_of_order.csv"
    raw_csv.write_text(OUT_OF_ORDER)
    model = model_path("llama2-7b")
    exported = str(tmp / "exported")
    p = cli("export", str(raw_csv), "--to", "pytorch", "-o", exported, "--model", model)
    assert "microbatches renumbered" in p.stdout + p.stderr
    # The file as written, run as it is: the last stage's forwards out of order.
    raw = str(tmp / "raw")
    shutil.copytree(exported, raw)
    with open(os.path.join(raw, "compute_only.csv"), "w") as f:
        f.write(OUT_OF_ORDER)
    # The exported comms file with its REDUCE_GRAD cells taken out.
    no_reduce = str(tmp / "no_reduce")
    shutil.copytree(exported, no_reduce)
    path = os.path.join(no_reduce, "compute_comms.csv")
    with open(path) as f:
        rows = [[c for c in line.split(",") if "REDUCE_GRAD" not in c] for line in f.read().splitlines()]
    with open(path, "w") as f:
        f.write("".join(",".join(r) + "\n" for r in rows))
    # The exported comms file with stage 0's REDUCE_GRAD moved before its last backward.
    early_reduce = str(tmp / "early_reduce")
    shutil.copytree(exported, early_reduce)
    path = os.path.join(early_reduce, "compute_comms.csv")
    with open(path) as f:
        rows = [line.split(",") for line in f.read().splitlines()]
    rows[0].remove("0REDUCE_GRAD")
    last = max(i for i, c in enumerate(rows[0]) if c[:2] in ("0B", "0W"))
    rows[0].insert(last, "0REDUCE_GRAD")
    with open(path, "w") as f:
        f.write("".join(",".join(r) + "\n" for r in rows))
    return model, exported, raw, no_reduce, early_reduce


def test_export_renumbers_microbatches_and_both_files_train_exactly(dirs):
    model, exported, _, _, _ = dirs
    with open(os.path.join(exported, "plan.json")) as f:
        assert json.load(f)["microbatch_renumbering"] == [1, 0]
    with open(os.path.join(exported, "compute_only.csv")) as f:  # idle cells dropped
        assert [[c for c in line.split(",") if c] for line in f.read().splitlines()] == [
            ["0F1", "0F0", "0B1", "0B0"], ["1F0", "1F1", "1B1", "1B0"]]
    run_plans(2, [(exported, model)])


def test_the_plan_reader_names_the_cell_that_breaks_a_rule(dirs):
    _, exported, raw, no_reduce, early_reduce = dirs
    load_plan(exported)
    with pytest.raises(PlanError, match=r"compute_only.csv:2:1: the last stage's forward number 0 is of "
                                        r"microbatch 1"):
        load_plan(raw)
    with pytest.raises(PlanError, match=r"stage 0 has 0 REDUCE_GRAD cells"):
        load_plan(no_reduce)
    with pytest.raises(PlanError, match=r"compute_comms.csv:1:\d+: '0REDUCE_GRAD' comes before '0B0' "
                                        r"\(.*compute_comms.csv:1:\d+\), a backward of stage 0"):
        load_plan(early_reduce)
    load_plan(raw, runtime_rules=False)


def test_pytorch_trains_on_the_wrong_losses_or_unscaled_gradients_without_an_error(dirs):
    # What the rules protect against, as PyTorch runs it: no error, different gradients. If a
    # PyTorch release fixes either, this fails and the rule can go.
    model, _, raw, no_reduce, early_reduce = dirs
    rc, out = torchrun(2, ["-m", "pipesmith.torch.run", "--timeout", "60", "--skip-runtime-rules",
                           "--case", raw, model, "--case", no_reduce, model, "--case", early_reduce, model],
                       timeout=300)
    verdicts = {" ".join(l.split(" ")[:2]).rstrip(":"): "DIFFER" if " DIFFER " in l else "match"
                for l in out.splitlines() if " the unpipelined run " in l}
    assert rc == 1, out[-4000:]
    assert verdicts == {f"{raw} compute_only": "DIFFER", f"{raw} compute_comms": "match",
                        f"{no_reduce} compute_only": "match", f"{no_reduce} compute_comms": "DIFFER",
                        f"{early_reduce} compute_only": "match", f"{early_reduce} compute_comms": "DIFFER"}, out[-4000:]


def test_the_runner_refuses_such_a_file(dirs):
    model, _, raw, _, _ = dirs
    rc, out = torchrun(2, ["-m", "pipesmith.torch.run", "--timeout", "60", raw, "--model", model], timeout=300)
    assert rc != 0 and "PyTorch would pair its loss with the backward of microbatch 0" in out, out[-4000:]
