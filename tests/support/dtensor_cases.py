"""One rank of the DTensor tests: `python tests/support/dtensor_cases.py RANK WORLD PORT BACKEND`.

Every case builds the same global tensors on every rank (same seed), runs a pointwise function
on DTensors and on the full tensors, and compares `full_tensor()` with the single-device result;
it also checks the placements and, where the rule says none is needed, that no collective ran
(CommDebugMode). tests/features/test_dtensor.py starts the ranks (gloo on CPU); on GPUs run
`python tests/support/dtensor_cases.py --launch 2 nccl`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback

import torch
import torch.distributed as dist
import triton
import triton.language as tl
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor, init_device_mesh
from torch.distributed.tensor.debug import CommDebugMode

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))  # the repository root
from tritonwise import ComplexMode, pointwise_dynamic  # noqa: E402


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def axpy(x, y, alpha):
    return x + y * alpha


complex_axpy = pointwise_dynamic(axpy.payload, is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])
complex_axpy.register_complex(ComplexMode.ELEMENTWISE)


@pointwise_dynamic(is_tensor=[True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def scale(x, alpha):
    return x * alpha


@pointwise_dynamic(promotion_methods=[((0, 1), "DEFAULT"), ((0, 1), "DEFAULT")])
@triton.jit
def polar(r, theta):
    return r * tl.cos(theta), r * tl.sin(theta)


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT"), (0, 1, "DEFAULT"), (0, 1, "DEFAULT")],
                   reductions=["sum", "max", "min"])
@triton.jit
def diff_stats(x, y):
    d = x - y
    return d * d, d, d


class Case:
    def __init__(self, mesh, device):
        self.mesh, self.device = mesh, device
        self.generator = torch.Generator().manual_seed(0)

    def full(self, *shape):
        return torch.randn(*shape, generator=self.generator).to(self.device)

    def dt(self, t, *placements):
        return distribute_tensor(t, self.mesh, list(placements))


def check(result, expected, placements=None, atol=1e-5):
    full = result.full_tensor()
    torch.testing.assert_close(full, expected, atol=atol, rtol=1e-5)
    if placements is not None:
        assert tuple(result.placements) == tuple(placements), (result.placements, placements)


def built_as_from_local(z) -> bool:
    """Whether z's DTensorSpec (mesh, placements, global shape, strides, dtype) is the one from_local builds."""
    local, shape, stride = z.to_local(), z.shape, z.stride()
    return z._spec == DTensor.from_local(local, z.device_mesh, z.placements, shape=shape, stride=stride)._spec


def no_collectives(fn, *args, **kwargs):
    """fn(*args, **kwargs), asserting that it ran no collective (build DTensor inputs before)."""
    with CommDebugMode() as comm:
        result = fn(*args, **kwargs)
    assert comm.get_total_counts() == 0, f"expected no collective, saw {comm.get_comm_counts()}"
    return result


def case_matching_shards(c: Case):
    x, y = c.full(8, 6), c.full(8, 6)
    z = no_collectives(axpy, c.dt(x, Shard(0)), c.dt(y, Shard(0)), 0.5)
    check(z, axpy(x, y, 0.5), [Shard(0)])


def case_replicated_operand_broadcasts_along_the_shard(c: Case):
    x, row = c.full(8, 6), c.full(6)
    z = no_collectives(axpy, c.dt(x, Shard(0)), c.dt(row, Replicate()), 2.0)
    check(z, axpy(x, row, 2.0), [Shard(0)])


def case_replicated_full_operand_is_sliced_locally(c: Case):
    x, y = c.full(4, 10), c.full(4, 10)
    z = no_collectives(axpy, c.dt(x, Shard(1)), c.dt(y, Replicate()), -1.0)
    check(z, axpy(x, y, -1.0), [Shard(1)])


def case_mismatched_shards_are_redistributed(c: Case):
    x, y = c.full(8, 8), c.full(8, 8)
    z = axpy(c.dt(x, Shard(0)), c.dt(y, Shard(1)), 1.5)
    check(z, axpy(x, y, 1.5), [Shard(0)])


def case_partial_input_is_reduced_first(c: Case):
    x, y = c.full(6, 4), c.full(6, 4)
    world = c.mesh.size()
    px = DTensor.from_local(x / world, c.mesh, [Partial()], run_check=False)  # the ranks' shares sum to x
    z = axpy(px, c.dt(y, Shard(0)), 3.0)
    check(z, axpy(x, y, 3.0), [Shard(0)])


def case_uneven_shards(c: Case):
    x, y = c.full(5, 3), c.full(3)
    z = no_collectives(axpy, c.dt(x, Shard(0)), c.dt(y, Replicate()), 1.0)
    check(z, axpy(x, y, 1.0), [Shard(0)])


def case_two_outputs(c: Case):
    r, theta = c.full(8, 4).abs(), c.full(8, 4)
    a, b = no_collectives(polar, c.dt(r, Shard(0)), c.dt(theta, Shard(0)))
    ea, eb = polar(r, theta)
    check(a, ea, [Shard(0)])
    check(b, eb, [Shard(0)])


def case_given_output_in_place(c: Case):
    x, y = c.full(8, 6), c.full(8, 6)
    dx = c.dt(x, Shard(0))
    out = no_collectives(axpy, dx, c.dt(y, Shard(0)), 2.0, out0=dx)
    assert out is dx
    check(out, x + 2.0 * y, [Shard(0)])


def case_repeated_calls_decide_per_signature(c: Case):
    """dtensor.call keeps what it decides per operand signature: a repeat, and a signature that
    differs only in placements or in a scalar's type, each get their own answer."""
    x, y = c.full(8, 6), c.full(8, 6)
    for placement, alpha in ((Shard(0), 0.5), (Shard(1), 0.5), (Shard(0), 0.5), (Shard(0), 2)):
        results = [no_collectives(axpy, c.dt(x, placement), c.dt(y, placement), alpha) for _ in range(2)]
        for z in results:
            check(z, axpy(x, y, alpha), [placement])
        assert all(map(built_as_from_local, results)), [z._spec for z in results]
    n = torch.arange(48, device=c.device).reshape(8, 6)
    for default in (torch.float32, torch.float64, torch.float32):  # the result's dtype: not the signature's
        previous = torch.get_default_dtype()
        torch.set_default_dtype(default)
        try:
            z = no_collectives(scale, c.dt(n, Shard(0)), 0.5)
        finally:
            torch.set_default_dtype(previous)
        assert z.dtype == z.to_local().dtype == default and built_as_from_local(z), (z._spec, default)
        check(z, n * torch.tensor(0.5, dtype=default), [Shard(0)])
    dx, dy = c.dt(x, Shard(0)), c.dt(y, Shard(0))
    for out_placement in (Shard(0), Shard(0), Shard(1), Shard(1)):  # a given output decides first
        out = c.dt(torch.zeros(8, 6, device=c.device), out_placement)
        assert axpy(dx, dy, 1.0, out0=out) is out
        check(out, x + y, [out_placement])
    try:
        axpy(dx, dy, 1.0, out0=c.dt(torch.zeros(8, 6, device=c.device), Replicate()))
    except RuntimeError as e:
        assert "out0 has placements" in str(e), e
    else:
        raise AssertionError("a replicated output of a sharded result was accepted")


def case_fused_reductions_are_partial(c: Case):
    x, y = c.full(7, 5), c.full(7, 5)
    results = no_collectives(diff_stats, c.dt(x, Shard(0)), c.dt(y, Shard(0)))
    for result, expected, kind in zip(results, diff_stats(x, y), ("sum", "max", "min")):
        check(result, expected, [Partial(kind)], atol=1e-4)


def case_replicated_everything(c: Case):
    x, y = c.full(3, 4), c.full(4)
    z = no_collectives(axpy, c.dt(x, Replicate()), c.dt(y, Replicate()), 1.0)
    check(z, axpy(x, y, 1.0), [Replicate()])


def case_torch_op_follows_the_derived_rule(c: Case):
    op = axpy.as_torch_op("tritonwise_dtensor_test::axpy")
    x, row = c.full(8, 6), c.full(6)
    z = no_collectives(op, c.dt(x, Shard(0)), c.dt(row, Replicate()), 2.0)
    check(z, axpy(x, row, 2.0), [Shard(0)])


def case_plain_tensor_beside_dtensor_is_refused(c: Case):
    x = c.full(4, 4)
    try:
        axpy(c.dt(x, Shard(0)), x, 1.0)
    except RuntimeError as e:
        assert "argument 1" in str(e) and "DTensor" in str(e), e
    else:
        raise AssertionError("a plain tensor beside DTensors was accepted")


def case_plain_given_output_beside_dtensors_is_refused(c: Case):
    x = c.full(4, 4)
    try:
        axpy(c.dt(x, Shard(0)), c.dt(x, Shard(0)), 1.0, out0=torch.empty_like(x))
    except TypeError as e:
        assert "out0 must be a DTensor" in str(e), e
    else:
        raise AssertionError("a plain given output beside DTensors was accepted")


def case_complex_shards(c: Case):
    """A function of complex operands (register_complex) runs on complex shards."""
    x, y = torch.complex(c.full(8, 6), c.full(8, 6)), torch.complex(c.full(8, 6), c.full(8, 6))
    z = no_collectives(complex_axpy, c.dt(x, Shard(0)), c.dt(y, Shard(0)), 0.5)
    check(z, x + y * 0.5, [Shard(0)])


CASES_1D = [v for k, v in sorted(globals().items()) if k.startswith("case_")]


def case_2d_mesh(c2: Case):
    x, y = c2.full(8, 6), c2.full(6)
    z = no_collectives(axpy, c2.dt(x, Shard(0), Shard(1)), c2.dt(y, Replicate(), Shard(0)), 0.25)
    check(z, axpy(x, y, 0.25), [Shard(0), Shard(1)])


def run_rank(rank: int, world: int, port: int, backend: str) -> int:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group(backend, rank=rank, world_size=world)
    device = "cuda" if backend == "nccl" else "cpu"
    if device == "cuda":
        torch.cuda.set_device(rank)
    failures = 0
    meshes = [("1d", init_device_mesh(device, (world,)), CASES_1D)]
    if world == 4:
        meshes.append(("2d", init_device_mesh(device, (2, 2)), [case_2d_mesh]))
    for label, mesh, cases in meshes:
        for case in cases:
            try:
                case(Case(mesh, device))
            except Exception:
                failures += 1
                print(f"rank {rank} {label} {case.__name__} FAILED\n{traceback.format_exc()}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        total = sum(len(c) for _, _, c in meshes)
        print(f"world {world} ({backend}): {total - failures} passed, {failures} failed")
    return failures


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(world: int, backend: str, port: int = 0) -> int:
    """Start `world` ranks of this script; the sum of their exit codes (0: every case passed)."""
    port = port or free_port()
    procs = [
        subprocess.Popen([sys.executable, __file__, str(r), str(world), str(port), backend]) for r in range(world)
    ]
    return sum(p.wait() for p in procs)


if __name__ == "__main__":
    if sys.argv[1] == "--launch":
        sys.exit(1 if launch(int(sys.argv[2]), sys.argv[3]) else 0)
    failed = run_rank(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    # The cases have run and reported, and the process group is destroyed. Leave without the
    # interpreter's finalization: torch's gloo backend at times aborts there ("terminate called
    # without an active exception", torch 2.13 CPU, about one CI run in several), which would
    # count as a failure of cases that passed.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1 if failed else 0)
