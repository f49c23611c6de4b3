"""Command line: `python -m tritonwise demo | cache path|list|show NAME|clear|stats | generate MODULE[:NAME] [--compile --arch sm_90,...]`."""

from __future__ import annotations

import argparse
import sys

from .runtime import cache


def _cache_command(args) -> int:
    if args.action == "path":
        print(cache.configured_dir())
    elif args.action == "list":
        for path in cache.list_files():
            print(f"{path.stat().st_size:>8}  {path.name}")
    elif args.action == "show":
        if not args.name:
            print("cache show needs a file name (see `cache list`)", file=sys.stderr)
            return 2
        matches = [p for p in cache.list_files() if p.name == args.name or p.name.startswith(args.name)]
        if len(matches) != 1:
            print(f"{len(matches)} cached files match {args.name!r}", file=sys.stderr)
            return 1
        print(matches[0].read_text(), end="")
    elif args.action == "clear":
        print(f"removed {cache.clear()} files from {cache.configured_dir()}")
    elif args.action == "stats":
        info = cache.stats()
        print(
            f"{info['directory']}: {info['files']} files, {info['bytes']} bytes, {info['kernels']} compiled kernels; "
            f"written {info['written']} times, reused {info['reused']} times"
        )
        for payload, count in sorted(info["per_payload"].items()):
            print(f"  {payload}: {count} files")
    return 0


def _generate_command(args) -> int:
    import torch

    from .aot import generate, parse_ranks, parse_shapes

    try:
        directory = cache.require_writable()
        targets = _targets(args.arch) if args.compile else []
    except (cache.CacheNotWritable, ValueError) as e:
        print(f"generate: {e}", file=sys.stderr)
        return 1
    dtypes = [getattr(torch, name) for name in args.dtypes.split(",")]
    shapes = parse_shapes(args.shapes) if args.shapes else [(4,) * r for r in parse_ranks(args.ranks)]
    count = generate(args.target, shapes, dtypes, targets=targets)
    kernels = f" and {len(cache.list_kernels())} compiled kernels" if targets else ""
    print(f"{count} files{kernels} in {directory}")
    return 0


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tritonwise", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run a few payloads on GPU (or CPU) and check them against torch")
    c = sub.add_parser("cache", help="inspect or clear the generated files and compiled kernels")
    c.add_argument("action", choices=["path", "list", "show", "clear", "stats"])
    c.add_argument("name", nargs="?", help="file name (or prefix) for `show`")
    g = sub.add_parser("generate", help="write the files a module's pointwise functions need, ahead of time")
    g.add_argument("target", help="MODULE or MODULE:NAME")
    g.add_argument("--ranks", default="0-4", help="a rank or a range such as 0-4")
    g.add_argument("--shapes", default="", help="shapes such as 4096x4096,8x1024 (instead of 4x...x4 per rank)")
    g.add_argument("--dtypes", default="float32", help="comma-separated torch dtype names")
    g.add_argument("--compile", action="store_true", help="also compile every kernel into the kernel store")
    g.add_argument("--arch", default="", help="--compile targets, e.g. sm_90,sm_100,gfx942 (default: this GPU)")
    args = parser.parse_args(argv)
    commands = {"demo": _demo_command, "cache": _cache_command, "generate": _generate_command}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
