from tritonwise import StridedBuffer  # noqa: F401
