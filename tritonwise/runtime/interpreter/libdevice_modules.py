"""The names of Triton's two libdevice modules, which the interpreter's patching replaces (a module
of their own: interpreter_numerics and interpreter_libdevice both need them, and import each other
only one way)."""

STUB_MODULE = "triton.language.extra.libdevice"  # backend-neutral stubs payloads import
BACKEND_MODULE = "triton.language.extra.cuda.libdevice"  # the CUDA builtins the stubs resolve to
