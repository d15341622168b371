"""pipesmith: synthesize, certify and run pipeline-parallel training schedules.

The PyTorch side lives in :mod:`pipesmith.torch` (plan loading, stage building, the reference
transformer and the runner for ``torch.distributed.pipelining``). The C++ CLI (``pipesmith``)
synthesizes, checks and exports schedules; this package runs what it exports.
"""

__version__ = "0.1.0"
