from tritonwise import CodeGenConfig, ComplexMode, FunctionSchema, PointwiseDynamicFunction, pointwise_dynamic  # noqa: F401
