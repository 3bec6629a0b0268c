"""Fits the two polynomials of the vector erf in src/kernels/vec_avx512.c.

  |x| <= 1:     erf(x) = x * P(x^2)               (P of degree 6)
  1 < |x| < 4:  erf(x) = 1 - exp(Q(|x| - 2.5))    (Q of degree 10, fits log erfc)

Least squares in float64 on a dense grid (P weighted to relative error).
Prints the coefficients as C initialisers and the worst errors of the fit.
  /usr/bin/python3 reference/fit_erf.py
"""
import math

import numpy as np

poly = np.polynomial.polynomial


def fit_small(deg=6):
    x = np.linspace(1e-6, 1.0, 20001)
    y = np.array([math.erf(v) / v for v in x])
    c = poly.polyfit(x * x, y, deg)
    err = np.max(np.abs(poly.polyval(x * x, c) - y) / y)
    return c, err


def fit_large(deg=10):
    x = np.linspace(1.0, 4.0, 40001)
    y = np.array([math.log(math.erfc(v)) for v in x])
    c = poly.polyfit(x - 2.5, y, deg)
    err = np.max(np.abs(poly.polyval(x - 2.5, c) - y))
    return c, err


def c_array(name, c):
    vals = ", ".join(f"{float(np.float32(v)):.10e}f" for v in c)
    return f"static const float {name}[{len(c)}] = {{{vals}}};"


if __name__ == "__main__":
    p, ep = fit_small()
    q, eq = fit_large()
    print(c_array("P", p))
    print(c_array("Q", q))
    print(f"// P: max relative error {ep:.2e}; Q: max error in log erfc {eq:.2e}")
