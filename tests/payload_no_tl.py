import triton


@triton.jit
def add(x, y):
    return x + y
