"""Derivative rules: for one operation over atoms, the adjoint each operand receives (one Triton
expression per operand, None for none), with ties and special points as torch's derivatives.yaml has
them. A rule takes the operands' text, then the result `y`, its adjoint `g` and the callee's text `f`.
"""

from __future__ import annotations

import ast

LN2 = "0.6931471805599453"
LN10 = "2.302585092994046"
TWO_OVER_SQRT_PI = "1.1283791670955126"


def _extremum_rule(wins: str):
    """maximum (`wins` ">") or minimum ("<"): the gradient to the winner, halved on a tie. Triton's
    maximum and minimum return the other operand where one is NaN, so an operand wins where the
    other is NaN too (both, where both are, as torch gives it to both)."""
    tie = "tl.where({a} == {b}, {g} * 0.5, 0.0)"
    return lambda a, b, y, g, f: [
        f"tl.where(({p} {wins} {q}) | ({q} != {q}), {g}, {tie.format(a=a, b=b, g=g)})" for p, q in ((a, b), (b, a))
    ]


def _pow_rule(a, b, y, g, power_less_one: str) -> list:
    """a ** b, with `power_less_one` the text of a ** (b - 1): torch's masks at the special points,
    no gradient to the base where the exponent is 0, none to the exponent where the base is 0 and
    the exponent not negative (where the plain formulas give NaN or infinities). A literal operand
    decides its mask here."""
    to_base, to_exponent = f"{g} * {b} * {power_less_one}", f"{g} * {y} * tl.log({a})"
    exponent, base = _number(b), _number(a)
    if exponent is None:
        to_base = f"tl.where({b} == 0.0, 0.0, {to_base})"
    elif exponent == 0:
        to_base = f"tl.zeros_like({g})"
    if base is None:
        to_exponent = f"tl.where(({a} == 0.0) & ({b} >= 0.0), 0.0, {to_exponent})"
    elif base == 0 and exponent is None:
        to_exponent = f"tl.where({b} >= 0.0, 0.0, {to_exponent})"
    elif base == 0 and exponent >= 0:
        to_exponent = f"tl.zeros_like({g})"
    return [to_base, to_exponent]


def _number(text: str):
    """The value of an operand written as a number, else None."""
    try:
        return float(text.strip("()"))
    except ValueError:
        return None


def _cast_rule(x, *rest):
    """(x, dtype, y, g, f): the gradient passes to `x` unchanged."""
    return [rest[-2]] + [None] * (len(rest) - 3)


def copy_rule(a, y, g, f):
    return [g]


# Functions of triton.language and libdevice, by name (libdevice's other spellings added below).
FUNCTIONS = {
    "exp": lambda a, y, g, f: [f"{g} * {y}"],
    "exp2": lambda a, y, g, f: [f"{g} * {y} * {LN2}"],
    "expm1": lambda a, y, g, f: [f"{g} * ({y} + 1.0)"],
    "log": lambda a, y, g, f: [f"{g} / {a}"],
    "log2": lambda a, y, g, f: [f"{g} / ({a} * {LN2})"],
    "log10": lambda a, y, g, f: [f"{g} / ({a} * {LN10})"],
    "log1p": lambda a, y, g, f: [f"{g} / ({a} + 1.0)"],
    "sqrt": lambda a, y, g, f: [f"{g} / (2.0 * {y})"],
    "rsqrt": lambda a, y, g, f: [f"-0.5 * {g} * {y} * {y} * {y}"],
    "sin": lambda a, y, g, f: [f"{g} * tl.cos({a})"],
    "cos": lambda a, y, g, f: [f"-({g} * tl.sin({a}))"],
    "sigmoid": lambda a, y, g, f: [f"{g} * {y} * (1.0 - {y})"],
    "tanh": lambda a, y, g, f: [f"{g} * (1.0 - {y} * {y})"],
    "erf": lambda a, y, g, f: [f"{g} * {TWO_OVER_SQRT_PI} * tl.exp(-({a} * {a}))"],
    "abs": lambda a, y, g, f: [f"tl.where({a} > 0, {g}, tl.where({a} < 0, -{g}, 0.0))"],
    "maximum": _extremum_rule(">"),
    "minimum": _extremum_rule("<"),
    "pow": lambda a, b, y, g, f: _pow_rule(a, b, y, g, f"{f}({a}, {b} - 1.0)"),
    "fma": lambda a, b, c, y, g, f: [f"{g} * {b}", f"{g} * {a}", g],
    # Triton's clamp is min(max(x, lo), hi), max dropping a NaN x: bounds crossed (lo > hi) return
    # hi, as torch's clamp does, and its gradient goes to hi alone, as torch's does.
    "clamp": lambda x, lo, hi, y, g, f: [
        f"tl.where(({x} >= {lo}) & ({x} <= {hi}), {g}, 0.0)",
        f"tl.where((({x} < {lo}) | ({x} != {x})) & ({lo} <= {hi}), {g}, 0.0)",  # a NaN x: lo, where lo <= hi
        f"tl.where(({x} > {hi}) | ({hi} < {lo}), {g}, 0.0)",
    ],
    "where": lambda c, a, b, y, g, f: [None, f"tl.where({c}, {g}, 0.0)", f"tl.where({c}, 0.0, {g})"],
    "cast": _cast_rule,
}
LIBDEVICE_SPELLINGS = {"sqrt_rn": "sqrt", "fabs": "abs", "fmax": "maximum", "fmin": "minimum"}
FUNCTIONS.update({alias: FUNCTIONS[name] for alias, name in LIBDEVICE_SPELLINGS.items()})

# Functions whose result does not depend differentiably on their operands (torch: zero gradient).
ZERO_GRADIENT = {
    "floor", "ceil", "trunc", "rint", "round", "nearbyint", "isnan", "isinf", "isfinited", "isfinite",
    "signbit", "zeros", "zeros_like", "full", "full_like", "arange", "program_id", "umulhi",
}  # fmt: skip

# Methods of a tensor value, as `x.to(tl.float32)`.
METHODS = {"to": _cast_rule}

# Operators by their ast type; those missing from both tables (//, %) are not differentiable.
OPERATORS = {
    ast.Add: lambda a, b, y, g, f: [g, g],
    ast.Sub: lambda a, b, y, g, f: [g, f"-{g}"],
    ast.Mult: lambda a, b, y, g, f: [f"{g} * {b}", f"{g} * {a}"],
    ast.Div: lambda a, b, y, g, f: [f"{g} / {b}", f"-{g} * {a} / ({b} * {b})"],
    ast.Pow: lambda a, b, y, g, f: _pow_rule(a, b, y, g, f"{a} ** ({b} - 1.0)"),
    ast.USub: lambda a, y, g, f: [f"-{g}"],
    ast.UAdd: lambda a, y, g, f: [g],
}
NO_GRADIENT_OPERATORS = (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift, ast.Not, ast.Invert)
