"""Command line: `python -m tritonwise demo` and `python -m tritonwise cache path|list|show NAME|clear`."""

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
    return 0


def _demo_command(args) -> int:
    from .demo import run_demo

    return run_demo()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tritonwise", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run a few payloads on GPU (or CPU) and check them against torch")
    c = sub.add_parser("cache", help="inspect or clear the generated-file cache")
    c.add_argument("action", choices=["path", "list", "show", "clear"])
    c.add_argument("name", nargs="?", help="file name (or prefix) for `show`")
    args = parser.parse_args(argv)
    return {"demo": _demo_command, "cache": _cache_command}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
