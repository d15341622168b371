"""pipesmith.torch.pipeline.finish, the way every torchrun worker of the package ends: the process
group destroyed, buffered output flushed, the status returned, and the interpreter's finalization
skipped (where a gloo worker thread freeing a collective's tensor would abort the rank)."""
import subprocess
import sys

from conftest import _env, torchrun

_WORKER = r'''
import atexit, sys, torch.distributed as dist
from pipesmith.torch import pipeline
sys.stdout = open(1, "w", buffering=1 << 16, closefd=False)  # block-buffered: finish must flush it
atexit.register(lambda: print("FINALIZED", flush=True))
dist.init_process_group("gloo")
got = [None] * dist.get_world_size()
dist.all_gather_object(got, {"rank": dist.get_rank()})  # gloo's worker threads hold Python tensors
print(f"rank {dist.get_rank()} gathered {sorted(g['rank'] for g in got)}")
pipeline.finish(0)
print("NOT REACHED", flush=True)
'''


def test_finish_ends_a_torchrun_worker_cleanly(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    rc, out = torchrun(2, [str(script)], timeout=120)
    assert rc == 0, out[-4000:]
    assert out.count("gathered [0, 1]") == 2, out[-4000:]
    assert "FINALIZED" not in out and "NOT REACHED" not in out, out[-4000:]


def test_finish_returns_the_status_without_a_process_group():
    code = ("import sys; from pipesmith.torch import pipeline; sys.stdout = open(1, 'w', buffering=1 << 16, "
            "closefd=False); print('before'); pipeline.finish(3)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120)
    assert p.returncode == 3 and p.stdout == "before\n", (p.returncode, p.stdout, p.stderr)
