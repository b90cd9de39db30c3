"""Statistics that adjit objects report, as named tuples with documented fields."""

from typing import NamedTuple


class StepStats(NamedTuple):
    """What one reverse sweep of ``adjit.steps(...)`` costs, from its schedule
    (``Steps.stats()``)."""

    steps: int
    """N, the number of steps."""
    snapshots: int
    """Stored states (snapshot slots) the schedule uses."""
    forward_steps: int
    """Step primals run per VJP call besides the N step VJPs, re-advances included: Revolve's
    minimal count for ``checkpoint:S``, N - 1 for the tape (one more with an objective)."""
    peak_bytes: int
    """Bytes one VJP call holds beyond the caller's buffers: stored states, the current state
    and adjoint, program buffers and the largest native workspace."""
