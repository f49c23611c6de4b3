"""Pointwise functions under torch.compile: the payload translated into torch operations.

translate.py    the payload's AST -> Python source over torch (`tw.exp`, `tw.to`, ...)
language.py     Triton's language restated over torch (what `tw` names)
expression.py   a function's expression with the kernels' promotion, per call class
hook.py         the calls that take it while dynamo traces, and as_torch_op's decomposition
"""
