import triton


@triton.jit
def add(x, y):
    return x + y


@triton.jit
def double(x):
    return x + x


@triton.jit
def double_plus(x, y):
    """Calls a @triton.jit helper of this module, which does not import triton.language either."""
    return double(x) + y
