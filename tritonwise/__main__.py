"""Command line: `python -m tritonwise demo | cache path|list|show NAME|clear|stats | generate
MODULE[:NAME] [--compile --arch sm_90,...]`.

A user's mistake ends the command with one line on stderr and status 2 (bad arguments) or 1, never a
traceback; output cut short by its reader (`| head`) ends quietly with status 141.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .runtime import cache, inventory

PROG = "python -m tritonwise"
BROKEN_PIPE_STATUS = 141  # 128 + SIGPIPE: what `cat` gives under `| head`


class UsageError(Exception):
    """A user's mistake, reported as one line: `status` 2 for bad arguments, 1 otherwise."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)", status=2)


def _cache_directory() -> Path:
    """The configured directory, when it is one this user can read (or does not exist yet)."""
    directory = cache.configured_dir()
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"cache: {directory} is not a directory (see TRITONWISE_CACHE_DIR)")
    if directory.exists() and not os.access(directory, os.R_OK | os.X_OK):
        raise UsageError(f"cache: cannot read the cache directory {directory} (permission denied)")
    return directory


def _cache_command(args) -> None:
    if args.name and args.action != "show":
        raise UsageError(f"cache {args.action}: takes no file name (got {args.name!r})", status=2)
    return _CACHE_ACTIONS[args.action](args)


def _cache_list(args) -> None:
    for path in inventory.generated_files(_cache_directory()):
        print(f"{path.stat().st_size:>8}  {path.name}")


def _cache_show(args) -> None:
    if not args.name:
        raise UsageError("cache show: needs a file name or prefix (see `cache list`)", status=2)
    files = inventory.generated_files(_cache_directory())
    matches = [p for p in files if p.name == args.name] or [p for p in files if p.name.startswith(args.name)]
    if not matches:
        raise UsageError(f"cache show: no cached file matches {args.name!r} (see `cache list`)")
    if len(matches) > 1:
        names = "".join(f"\n  {p.name}" for p in matches)
        raise UsageError(f"cache show: {len(matches)} cached files match {args.name!r}; name one of them:{names}")
    print(matches[0].read_text(), end="")


def _cache_clear(args) -> None:
    directory = _cache_directory()
    done = inventory.clear(directory)
    print(
        f"removed {_count(done.files, 'generated file')}, {_count(done.kernels, 'compiled kernel')} and "
        f"{_count(done.probes, 'probe result')} from {directory}"
    )
    if done.failed:
        path, reason = done.failed[0]
        others = f" (and {len(done.failed) - 1} more)" if len(done.failed) > 1 else ""
        raise UsageError(f"cache clear: cannot remove {path}{others}: {reason}")


def _cache_stats(args) -> None:
    info = inventory.stats(_cache_directory())
    print(
        f"{info['directory']}: {info['files']} files, {info['bytes']} bytes, {info['kernels']} compiled kernels, "
        f"{info['probes']} probe results; written {info['written']} times, reused {info['reused']} times"
    )
    for function, count in sorted(info["per_function"].items()):
        print(f"  {function}: {count} files")


_CACHE_ACTIONS = dict(
    path=lambda args: print(cache.configured_dir()),
    list=_cache_list, show=_cache_show, clear=_cache_clear, stats=_cache_stats,
)  # fmt: skip


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _generate_command(args) -> None:
    from .aot import GenerateError, generate, parse_dtypes, parse_ranks, parse_shapes

    try:
        dtypes = parse_dtypes(args.dtypes)
        shapes = parse_shapes(args.shapes) if args.shapes else [(4,) * r for r in parse_ranks(args.ranks)]
        targets = _targets(args.arch) if args.compile else []
        directory = cache.require_writable()
    except cache.CacheNotWritable as e:
        raise UsageError(f"generate: {e}") from None
    except ValueError as e:
        raise UsageError(f"generate: {e}", status=2) from None
    stored = len(inventory.kernels(directory)) if targets else 0
    try:
        count = generate(args.target, shapes, dtypes, targets=targets)
    except GenerateError as e:
        raise UsageError(f"generate: {e}") from None
    if targets:  # the store may hold kernels of earlier runs: this run's are those it added
        now = len(inventory.kernels(directory))
        print(f"{count} files and {_count(now - stored, 'newly compiled kernel')} ({now} in the store) in {directory}")
    else:
        print(f"{count} files in {directory}")


def _targets(arch: str) -> list:
    """--arch as targets; this machine's GPU when none are named."""
    import torch

    from .runtime.kernels import device_target, parse_target

    if arch:
        return [parse_target(a) for a in arch.split(",")]
    if torch.cuda.is_available():
        return [device_target(torch.cuda.current_device())]
    raise ValueError("--compile: there is no GPU here; name the targets with --arch (e.g. sm_90,sm_100)")


def _demo_command(args) -> int:
    from .demo import run_demo

    return run_demo()


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run a few payloads on GPU (or CPU) and check them against torch")
    c = sub.add_parser("cache", help="inspect or clear the generated files and compiled kernels")
    c.add_argument("action", choices=list(_CACHE_ACTIONS))
    c.add_argument("name", nargs="?", help="file name (or prefix) for `show`")
    g = sub.add_parser("generate", help="write the files a module's pointwise functions need, ahead of time")
    g.add_argument("target", help="MODULE or MODULE:NAME")
    g.add_argument("--ranks", default="0-4", help="a rank or a range such as 0-4")
    g.add_argument("--shapes", default="", help="shapes such as 4096x4096,8x1024 (instead of 4x...x4 per rank)")
    g.add_argument("--dtypes", default="float32", help="comma-separated torch dtype names")
    g.add_argument("--compile", action="store_true", help="also compile every kernel into the kernel store")
    g.add_argument("--arch", default="", help="--compile targets, e.g. sm_90,sm_100,gfx942 (default: this GPU)")
    return parser


def main(argv=None) -> int:
    try:
        args = _parser().parse_args(argv)
        commands = {"demo": _demo_command, "cache": _cache_command, "generate": _generate_command}
        status = commands[args.command](args) or 0  # a command returns a status only where it fails
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return status
    except UsageError as e:
        return _fail(str(e), e.status)
    except BrokenPipeError:
        return _closed_pipe()
    except OSError as e:  # a directory or file the user pointed at cannot be read or written
        where = f": {e.filename}" if e.filename else ""
        return _fail(f"{PROG}: {e.strerror or e}{where}", 1)
    except KeyboardInterrupt:
        return _fail(f"{PROG}: interrupted", 130)


def _fail(message: str, status: int) -> int:
    prefix = "" if message.startswith(PROG) else f"{PROG} "
    try:
        print(f"{prefix}{message}", file=sys.stderr)
    except OSError:
        pass
    return status


def _closed_pipe() -> int:
    """Point stdout at /dev/null once its reader has gone, so the final flush has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return BROKEN_PIPE_STATUS


if __name__ == "__main__":
    sys.exit(main())
