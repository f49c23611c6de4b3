"""Siblings: a new plan launches through the rebound launcher of an earlier plan of its kernel
(kernels.Rebinding), instead of a first launch, wherever Triton gives both one specialization.
"""

from __future__ import annotations

from ..runtime.kernels import Rebinding


class Siblings:
    """Plans grouped by call class and generated file, keeping the first plan of each specialization
    met (sizes divisible by 16 or not), up to PER_GROUP: a later plan takes its launcher rebound."""

    PER_GROUP = 8

    def __init__(self):
        self._groups: dict = {}

    def adopt(self, key: tuple, plan) -> None:
        """Give `plan` (built for the call `key`) a rebound launcher, or keep it as its specialization's first."""
        if plan.device.type != "cuda" or plan.interpreted or plan.spec is None or not plan.allocates_and_launches:
            return  # nothing launches through launch.c
        group = self._groups.setdefault((shape_free_class(key), plan.spec.file_name), [])
        if any(launched.lend(plan) for launched in group):
            return
        if len(group) >= self.PER_GROUP:  # make room: plans launched only while launch.c built, never since
            group[:] = [launched for launched in group if launched.plan.direct is not None]
        if len(group) < self.PER_GROUP:
            group.append(_Launched(plan))


def shape_free_class(key: tuple) -> tuple:
    """A call signature (runtime/arguments.call_signature) without its shapes and strides."""
    return tuple(tuple(x for x in e if not isinstance(x, tuple)) if isinstance(e, tuple) else e for e in key)


class _Launched:
    """A plan whose launcher, once it has launched, later plans of its kernel take rebound."""

    def __init__(self, plan):
        self.plan = plan
        self._rebinding = None  # kernels.Rebinding, once the plan has launched

    def lend(self, plan) -> bool:
        """Give `plan` this plan's launcher rebound to its values, where that is sound."""
        if self._rebinding is None and self.plan.direct is not None:  # it has launched
            self._rebinding = Rebinding(self.plan)
        direct = self._rebinding and self._rebinding.launcher(plan)
        if direct is not None:
            plan.use_launcher(direct)
        return direct is not None
