"""ATen helpers for the C launcher (aten.cpp): a cached call's signature, output allocation and data
pointers taken on the C++ tensor, not through torch's Python API; launch.c falls back to the Python
API wherever they decline (a torch function mode, another argument type).

They are built once per torch version, on a background thread while calls go on through the Python
API; a process that ends before the build does waits for it at exit (up to EXIT_WAIT_S), so that
the next one finds them built (else every short process would start the compile again and none
would finish it).
`TRITONWISE_ATEN=0`: do without them; `TRITONWISE_ATEN=wait`: build before the first launch
(benchmarks do).
"""

from __future__ import annotations

import atexit
import functools
import logging
import threading
from pathlib import Path
from typing import Optional

import torch

from ..config import setting
from . import cache, native

logger = logging.getLogger("tritonwise")
SOURCE = Path(__file__).with_name("aten.cpp")
INCLUDED = [Path(__file__).with_name("recording.h")]
MODULE_NAME = "_tritonwise_aten"
# What torch.utils.cpp_extension compiles with since torch 2.10; torch 2.14's headers need it
# (std::strong_ordering), and older ones compile under it too.
CXX_STANDARD = "-std=c++20"
EXIT_WAIT_S = 120  # the compile takes 11-19 s on the machines measured (docs/performance.md)

_lock = threading.Lock()
_started: Optional[threading.Thread] = None


@functools.lru_cache(maxsize=None)
def helpers():
    """The compiled helper module; raises one of native.BUILD_ERRORS where it cannot be built."""
    torch_dir = Path(torch.__file__).parent
    include, lib = torch_dir / "include", torch_dir / "lib"
    flags = [
        CXX_STANDARD, "-w",  # -w: torch's headers warn under this standard and compiler; nothing of ours is hidden
        f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
        f"-I{include}", f"-I{include / 'torch' / 'csrc' / 'api' / 'include'}",
        f"-L{lib}", f"-Wl,-rpath,{lib}", "-lc10", "-ltorch_cpu", "-ltorch_python",
    ]  # fmt: skip
    depends_on = f"{torch.__version__} {torch_dir}".encode()
    compiler = lambda: native.compiler("CXX", "c++", "g++")  # noqa: E731
    return native.built_module(MODULE_NAME, [SOURCE, *INCLUDED], compiler, flags, depends_on)


def use(launch_module, helper_module) -> None:
    """Hand launch.c the helpers' addresses (None: stop using them)."""
    launch_module.use_aten(*(helper_module.addresses() if helper_module is not None else (0,) * 6))


def start(launch_module) -> None:
    """Give launch.c the helpers: now where they are built or TRITONWISE_ATEN=wait, else once a
    background thread has built them. Once per process; nothing where TRITONWISE_ATEN=0."""
    global _started
    mode = setting("TRITONWISE_ATEN", ("0", "1", "wait"))
    with _lock:
        if _started is not None or mode == "0":
            return
        _started = threading.Thread(target=_build_and_use, args=(launch_module,), name="tritonwise-aten", daemon=True)
        if mode == "wait":
            _started.run()
        else:
            _started.start()
            atexit.register(_finish_build, _started)


def wait_for_build(timeout: float = EXIT_WAIT_S) -> None:
    """Wait up to `timeout` s for the background build this process started, if it still runs (a
    caller about to remove the cache directory the build writes into, as the test session does)."""
    builder = _started
    if builder is not None and builder.is_alive():
        builder.join(timeout=timeout)


def _finish_build(builder: threading.Thread) -> None:
    """At exit: wait up to EXIT_WAIT_S for a build still running, unless its directory is this
    process's private one, which goes at exit with what it holds."""
    if not builder.is_alive() or cache.is_private(cache.cache_dir()):
        return
    logger.warning(
        "tritonwise: finishing the build of its ATen helpers before exiting (once per torch version, at most "
        "%d s; TRITONWISE_ATEN=0 does without them)",
        EXIT_WAIT_S,
    )
    builder.join(timeout=EXIT_WAIT_S)  # the compile may wait on another process's lock: not forever


def _build_and_use(launch_module) -> None:
    try:
        use(launch_module, helpers())
    except native.BUILD_ERRORS as e:
        native.report_build_failure("the ATen helpers (aten.cpp)", "allocating through torch's Python API", e)
